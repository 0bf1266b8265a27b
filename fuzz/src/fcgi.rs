//! The FastCGI record reader flint serve reads an application's answer with
//! (`serve::fcgi_record::Reader`): an input is what one application sends on one connection
//! for one request. Properties, beyond "no panic":
//! - each read uses no more than it is given and reads nothing past it (guard page, see
//!   [`crate::guard`]); stream content comes out as sub-slices of the input, at most `max`
//!   bytes at a time, and a read that reports nothing has used all of its input;
//! - the records read are the ones a reference reader written for clarity over the whole buffer
//!   ([`reference`]) finds: the same STDOUT and STDERR bytes, the same END_REQUEST, the same
//!   error at the same record;
//! - the input arriving in arbitrary reads, stream content handed out in pieces of any size,
//!   gives the same result as all of it at once.

use serve::fcgi_record::{self as rec, Event, Reader, RecordError};

use crate::guard::with_guarded;
use crate::split::cuts;

/// What a reader made of a connection.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Seen {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub end: Option<(u32, u8)>,
    pub error: Option<RecordError>,
    /// The input ended in the middle of a record.
    pub partial: bool,
}

/// Runs every check on one input.
pub fn check(data: &[u8]) {
    let whole = read(data, &[data.len()], usize::MAX);
    let max = 1 + data.first().map_or(0, |&b| usize::from(b % 64));
    let split = read(data, &cuts(data), max);
    assert_eq!(
        whole, split,
        "read in pieces, the records say something else"
    );
    assert_eq!(
        whole,
        reference(data),
        "the reader and the reference disagree"
    );
    with_guarded(data, |buf| {
        let mut r = Reader::new();
        let _ = r.read(buf, usize::MAX);
    });
}

/// Reads `data` arriving in reads ending at `cuts`, stream content at most `max` at a time.
pub fn read(data: &[u8], cuts: &[usize], max: usize) -> Seen {
    let mut r = Reader::new();
    let mut seen = Seen::default();
    let mut start = 0;
    for &end in cuts {
        let piece = &data[start..end];
        start = end;
        let mut pos = 0;
        loop {
            let (used, event) = match r.read(&piece[pos..], max) {
                Ok(x) => x,
                Err(e) => {
                    seen.error = Some(e);
                    return seen;
                }
            };
            assert!(used <= piece.len() - pos, "used more than it was given");
            let rest = &piece[pos..];
            pos += used;
            match event {
                Some(Event::Stdout(d)) | Some(Event::Stderr(d)) => {
                    assert!(!d.is_empty() && d.len() <= max);
                    let inside = rest.as_ptr_range();
                    assert!(inside.start <= d.as_ptr() && d.as_ptr_range().end <= inside.end);
                    if matches!(event, Some(Event::Stdout(_))) {
                        seen.stdout.extend_from_slice(d);
                    } else {
                        seen.stderr.extend_from_slice(d);
                    }
                }
                Some(Event::End {
                    app_status,
                    protocol_status,
                }) => {
                    assert!(r.ended() && r.at_boundary());
                    seen.end = Some((app_status, protocol_status));
                }
                None => {
                    assert_eq!(pos, piece.len(), "nothing reported, yet input left");
                    break;
                }
            }
        }
    }
    seen.partial = !r.at_boundary();
    seen
}

/// The records of a whole buffer, read the plain way: header, content, padding, one after the
/// other.
pub fn reference(mut data: &[u8]) -> Seen {
    let mut seen = Seen::default();
    while !data.is_empty() {
        if seen.end.is_some() {
            seen.error = Some(RecordError::AfterEnd);
            return seen;
        }
        if data.len() < rec::HEADER_LEN {
            seen.partial = true;
            return seen;
        }
        let (version, kind) = (data[0], data[1]);
        let id = u16::from_be_bytes([data[2], data[3]]);
        let len = usize::from(u16::from_be_bytes([data[4], data[5]]));
        let padding = usize::from(data[6]);
        let error = if version != rec::VERSION_1 {
            Some(RecordError::Version(version))
        } else if id == 0 && matches!(kind, rec::GET_VALUES_RESULT | rec::UNKNOWN_TYPE) {
            None
        } else if !matches!(kind, rec::STDOUT | rec::STDERR | rec::END_REQUEST) {
            Some(RecordError::UnexpectedType(kind))
        } else if id != rec::REQUEST_ID {
            Some(RecordError::RequestId(id))
        } else if kind == rec::END_REQUEST && len != 8 {
            Some(RecordError::EndLength(len as u16))
        } else {
            None
        };
        if let Some(e) = error {
            seen.error = Some(e);
            return seen;
        }
        let body = &data[rec::HEADER_LEN..];
        let content = &body[..len.min(body.len())];
        match kind {
            rec::STDOUT if id != 0 => seen.stdout.extend_from_slice(content),
            rec::STDERR => seen.stderr.extend_from_slice(content),
            _ => {}
        }
        if body.len() < len + padding {
            seen.partial = true;
            return seen;
        }
        if kind == rec::END_REQUEST && id != 0 {
            let c = content;
            seen.end = Some((u32::from_be_bytes([c[0], c[1], c[2], c[3]]), c[4]));
        }
        data = &body[len + padding..];
    }
    seen
}
