//! Workloads for applications: requests that differ per user and answers that are checked.
//!
//! A static workload sends the same requests over and over and counts a response as answered
//! when it came. An application's users log in, carry a cookie, ask for their own records and
//! post forms, and a 200 holding an error page is a failure. The pieces here give a workload
//! that, each compiled before the run so that a mistake is one line with its place, and each
//! working per Webchild without locks:
//!
//! - [`template::Template`]: a path, header value or body with `{{...}}` holes (data columns,
//!   extracted values, `{{random A B}}`, `{{seq}}`, `{{webchild}}`), escaped where it lands;
//! - [`data::DataSet`]: CSV rows drawn one per page (`unique`, `cycle`, `random`);
//! - [`check::Expect`]: status, header, content type, body text, regex, JSON pointer and length
//!   checks, each failure an error kind of its own;
//! - [`extract::Extract`]: values taken from a response (header, cookie, regex group, JSON
//!   pointer) for later requests;
//! - [`fields::Fields`]: a response's header fields, walked in its head's text;
//! - [`jar::Jar`]: one Webchild's cookies, capped per domain, its expired ones dropped;
//! - [`session::Session`]: one Webchild's rows, values, cookie jar and counters;
//! - [`plan::Plan`]: all of the above compiled from a workload file, per URL;
//! - `spelling.rs`: how a file spells a status list, a body length and an extraction's
//!   source, read with messages in the workload's words rather than serde's.

pub mod check;
pub mod data;
pub mod extract;
pub mod fields;
pub mod jar;
pub mod plan;
pub mod session;
mod spelling;
pub mod template;
