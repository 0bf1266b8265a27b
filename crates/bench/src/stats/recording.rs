//! The recording API: one call per event, from the engine, each O(1) and allocation-free.

use super::{ErrorKind, Stats, TlsAgreed, TlsSession, MAX_RAMP};

/// One complete response, as the engine hands it to [`Stats::record_response`]: times in µs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ResponseSample {
    /// The response's head, status line and fields, as read.
    pub header_bytes: u64,
    /// The response's body, after its framing (chunk sizes, HTTP/2 frame headers) is taken off.
    pub body_bytes: u64,
    /// Request written (open loop, first file of a page: intended start) to first response byte.
    pub ttfb_us: u64,
    /// (Intended) start of the fetch to the last byte, connect included.
    pub response_us: u64,
    /// The same from the actual start (differs from `response_us` only in open loop).
    pub response_uncorrected_us: u64,
    /// Request written to the last byte (ptester's transfer time).
    pub transfer_us: u64,
}

/// Recording, one call per event: the engine says what happened, these say where it is counted.
/// All O(1), none allocates.
impl Stats {
    /// A TLS handshake that took `us` after the TCP connect.
    #[inline]
    pub fn record_tls_handshake(&mut self, us: u64, resumed: bool, agreed: TlsAgreed) {
        self.tls_handshakes += 1;
        self.tls_resumed += u64::from(resumed);
        self.tls_handshake.record_us(us);
        if self.tls_session.is_none() {
            // Once per thread: the names are copied only for the first handshake.
            self.tls_session = Some(TlsSession {
                version: agreed.version.to_owned(),
                cipher: agreed.cipher.to_owned(),
                kx: agreed.kx.to_owned(),
                alpn: agreed.alpn.map(str::to_owned),
            });
        }
    }

    /// A connection opened to fetch `url` as part of `page`.
    #[inline]
    pub fn record_connect(&mut self, page: usize, url: usize, connect_us: u64) {
        self.connects += 1;
        self.connect.record_us(connect_us);
        let u = &mut self.urls[url];
        u.connects += 1;
        u.connect_us_min = u.connect_us_min.min(connect_us);
        u.connect_us_max = u.connect_us_max.max(connect_us);
        u.connect_us_sum += connect_us;
        let p = &mut self.pages[page];
        p.connects += 1;
        p.connect_us_sum += connect_us;
        p.connect_us_max = p.connect_us_max.max(connect_us);
    }

    /// A response that matched its framing (any status: a non-2xx is also recorded as an error).
    #[inline]
    pub fn record_response(&mut self, page: usize, url: usize, r: &ResponseSample) {
        self.requests += 1;
        self.bytes_header += r.header_bytes;
        self.bytes_body += r.body_bytes;
        self.ttfb.record_us(r.ttfb_us);
        self.response.record_us(r.response_us);
        self.response_us_max = self.response_us_max.max(r.response_us);
        if let Some(h) = &mut self.response_uncorrected {
            h.record_us(r.response_uncorrected_us);
        }
        let u = &mut self.urls[url];
        u.requests += 1;
        u.header_bytes += r.header_bytes;
        u.body_bytes += r.body_bytes;
        u.last_body_size = r.body_bytes;
        u.transfer_us_min = u.transfer_us_min.min(r.transfer_us);
        u.transfer_us_max = u.transfer_us_max.max(r.transfer_us);
        u.transfer_us_sum += r.transfer_us;
        u.response.record_us(r.response_us);
        let p = &mut self.pages[page];
        p.header_bytes += r.header_bytes;
        p.body_bytes += r.body_bytes;
    }

    /// `--redirect N`: a redirect followed, a request the server answered; its time is its
    /// page entry's (not a response time of its own).
    pub fn record_redirect(&mut self, header_bytes: u64, body_bytes: u64) {
        self.requests += 1;
        self.bytes_header += header_bytes;
        self.bytes_body += body_bytes;
        self.redirects.followed += 1;
    }

    /// Open loop: a page of the window started `lag_us` after its intended time; `late`: it
    /// started after its schedule's end and grace (`-n`, see `pages_sent_late`).
    #[inline]
    pub fn record_send_lag(&mut self, lag_us: u64, late: bool) {
        self.pages_scheduled += 1;
        self.pages_sent_late += u64::from(late);
        if let Some(h) = &mut self.send_lag {
            h.record_us(lag_us);
        }
    }

    /// A request of the window begun but not sent at the end (see `unsent_at_end`): in the
    /// open loop it enters the corrected figures with its wait, as an unfinished one does.
    pub fn record_unsent(&mut self, wait_us: u64, corrected: Option<Option<u64>>) {
        self.unsent_at_end += 1;
        self.record_wait_at_end(wait_us, corrected);
    }

    /// Open loop (`corrected` is Some): a request in flight at the end enters the response
    /// figures with its wait, and its page's wait (a lower bound) enters the page figures when
    /// given: for one of the page's files only, so that a page counts once however many of
    /// its files were in flight.
    fn record_wait_at_end(&mut self, wait_us: u64, corrected: Option<Option<u64>>) {
        if let Some(page_wait) = corrected {
            self.response.record_us(wait_us);
            if let Some(page_us) = page_wait {
                self.page.record_us(page_us);
            }
        }
    }

    /// A request sent and still unanswered when the run ended, after `wait_us` (from its start,
    /// or in the open loop its intended start); `corrected`: open loop, with its page's wait
    /// for the first of the page's files (as [`Stats::record_unsent`]). `bytes`: what had
    /// arrived of its response.
    pub fn record_unfinished(&mut self, wait_us: u64, corrected: Option<Option<u64>>, bytes: u64) {
        self.unfinished += 1;
        self.unfinished_wait.record_us(wait_us);
        self.bytes_unfinished += bytes;
        self.record_wait_at_end(wait_us, corrected);
    }

    /// Open loop: `n` pages due in the window that never started before it ended at `end_us`,
    /// the first due at `first_us` and one every `interval_us` after. Each enters the corrected
    /// figures with the time it had waited at the end (a lower bound); a backlog of more than
    /// [`MAX_RAMP`] pages is recorded in that many steps, each standing for its share of pages.
    pub fn record_not_sent(&mut self, end_us: u64, first_us: f64, interval_us: f64, n: u64) {
        self.pages_scheduled = self.pages_scheduled.saturating_add(n);
        self.pages_not_sent = self.pages_not_sent.saturating_add(n);
        let step = n.div_ceil(MAX_RAMP).max(1);
        let mut k = 0;
        while k < n {
            let count = step.min(n - k);
            let wait = end_us.saturating_sub((first_us + k as f64 * interval_us) as u64);
            self.response.record_n_us(wait, count);
            self.page.record_n_us(wait, count);
            k += count;
        }
    }

    /// A request of `url` failed (or completed with a non-2xx status) for this reason.
    #[inline]
    pub fn record_error(&mut self, url: usize, kind: ErrorKind) {
        self.errors.add(kind);
        self.urls[url].errors += 1;
    }

    /// A page ended: `hit` when every file completed with a 2xx, else it counts as a page error.
    /// `time_us` from the (intended) start of its first file; `uncorrected_us` from the actual one.
    #[inline]
    pub fn record_page(&mut self, page: usize, hit: bool, time_us: u64, uncorrected_us: u64) {
        let p = &mut self.pages[page];
        if !hit {
            p.errors += 1;
            return;
        }
        p.hits += 1;
        p.time_us_sum += time_us;
        p.time_us_max = p.time_us_max.max(time_us);
        p.time.record_us(time_us);
        self.pages_done += 1;
        self.page.record_us(time_us);
        if let Some(h) = &mut self.page_uncorrected {
            h.record_us(uncorrected_us);
        }
    }
}
