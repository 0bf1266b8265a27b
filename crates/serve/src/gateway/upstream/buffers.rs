//! A gateway request's two buffers, recycled by the thread's pool (`pool.rs`): the records
//! (FastCGI) or the head (a proxied request) to write, and what is read back.

/// Bytes read from the application (or upstream) at once.
const INPUT: usize = 16 * 1024;
/// Room for a request's records as they are encoded: its BEGIN_REQUEST and PARAMS fit.
const RECORDS: usize = 4096;

/// A request's two buffers, recycled by the thread's pool: the records to write, and what is
/// read from the application.
#[derive(Debug)]
pub(crate) struct Buffers {
    pub(crate) out: Vec<u8>,
    pub(crate) input: Box<[u8]>,
    /// A proxied response's head as it arrives, and the CGI head made of it (`gateway/proxy`;
    /// empty, unallocated, for FastCGI).
    pub(crate) head: Vec<u8>,
    pub(crate) cgi: Vec<u8>,
}

impl Buffers {
    pub fn new() -> Buffers {
        Buffers {
            out: Vec::with_capacity(RECORDS),
            input: vec![0; INPUT].into_boxed_slice(),
            head: Vec::new(),
            cgi: Vec::new(),
        }
    }

    /// Room for a request's records alone (encoded with no reallocation, as in a pooled
    /// buffer): what a request holds before it has a program slot (a chunked body being
    /// read). No input buffer.
    pub fn records_only() -> Buffers {
        Buffers {
            out: Vec::with_capacity(RECORDS),
            input: Box::default(),
            head: Vec::new(),
            cgi: Vec::new(),
        }
    }

    /// Whether these are [`Buffers::records_only`]: the request is not started.
    pub fn is_records_only(&self) -> bool {
        self.input.is_empty()
    }
}
