//! A URL's request fields that no template or cookie changes, kept apart from what builds them
//! (`app.rs`) so that the run's shared state can hold them without importing the client's
//! application logic.

/// A URL's request fields that no template or cookie changes, written once at start and
/// copied into each request (writing them per request was a good part of building one); a
/// templated `Authorization` goes between the two parts, the templated fields and the cookies
/// after them.
pub(crate) struct FixedFields {
    /// The request line's end (` HTTP/1.1`), `Host`, `User-Agent` and, unless a template
    /// gives it, the target's `Authorization`.
    pub(super) before_auth: Vec<u8>,
    /// `Connection: close` where it is said, then the spec's own fields.
    pub(super) after_auth: Vec<u8>,
    /// The request names its own `Cookie` field: the jar's is not added.
    pub(super) own_cookie: bool,
    /// The request names its own `Authorization` field: a templated `auth` is not added.
    pub(super) own_auth: bool,
}
