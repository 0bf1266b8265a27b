//! HTTP/1.x pieces that flint's load generator and its server share.
//!
//! Both sides of flint speak the same protocol, and a framing bug on one side would hide a framing
//! bug on the other if each had its own parser. So the parsing (on `httparse`), the body framing
//! rules of RFC 9112 section 6 (length, chunked, close-delimited, no body), the writing of heads and
//! the once-a-second `Date` live here, once, tested against each other.
//!
//! Nothing here allocates per message: parsers borrow from the caller's buffer and writers append
//! to the caller's `Vec<u8>`.

#![warn(missing_docs)]

pub mod date;
pub mod field_name;
pub mod head;
pub mod request;
pub mod response;
mod text;

pub use date::{http_date, parse_http_date, DateCache};
pub use field_name::FieldName;
pub use request::{
    is_token, parse_request, Method, PassedHost, Request, RequestError, RequestLimits, Version,
};
pub use response::{
    parse_response_head, BodyDecoder, BodyProgress, Framing, ResponseError, ResponseHead,
};
pub use text::{is_field_value, parse_digits, trim_ows};
