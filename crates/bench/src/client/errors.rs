//! What each failure counts as: the error kinds of the statistics, from I/O errors, head parse
//! errors and statuses. Cold paths, kept out of the event loop's file.

use crate::config::ExpectStatus;
use crate::stats::{ErrorKind, TlsFailure};
use std::{fmt, io};
use wire::response::ResponseError;

pub(super) fn connect_error(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ErrorKind::ConnectRefused,
        io::ErrorKind::TimedOut => ErrorKind::ConnectTimeout,
        _ => ErrorKind::ConnectOther,
    }
}

/// A failed TLS handshake: the certificate refused, a reset or close during it, or any other
/// failure (no common version, a plaintext server's answer).
pub(super) fn handshake_error(e: &io::Error) -> ErrorKind {
    let tls = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match tls {
        Some(rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented) => {
            ErrorKind::TlsCertificate
        }
        Some(_) => ErrorKind::TlsHandshake,
        None => match e.kind() {
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof => ErrorKind::TlsReset,
            _ => ErrorKind::TlsHandshake,
        },
    }
}

impl super::ThreadState<'_> {
    /// A failed handshake: its reason counted (in the window), and said with `--debug` as the
    /// reports say it, knowing the `--cacert` file given.
    #[cold]
    pub(super) fn handshake_failed(&mut self, e: &io::Error, start_us: u64, now: u64) {
        self.tls_failed(TlsFailure::of(e), Some(e), start_us, now);
    }

    /// A handshake failed for `reason` (over TCP or QUIC): counted (in the window), and said
    /// with `--debug`, with `detail` (the error that told it) when there is one.
    #[cold]
    pub(super) fn tls_failed(
        &mut self,
        reason: TlsFailure,
        detail: Option<&dyn fmt::Display>,
        start_us: u64,
        now: u64,
    ) {
        if self.counts(start_us, now) {
            self.stats.tls_failures.add(reason);
        }
        if self.sh.config.debug {
            let (name, why) = (reason.name(), reason.explain_for(&self.sh.config.tls));
            match detail {
                Some(d) => eprintln!("flint: TLS handshake failed: {name}: {why} ({d})"),
                None => eprintln!("flint: TLS handshake failed: {name}: {why}"),
            }
        }
    }
}

/// Whether a failed handshake is the server refusing every protocol the client offered by ALPN
/// (for HTTP/2, `h2` alone): the server does not speak HTTP/2 over TLS.
pub(super) fn alpn_refused(e: &io::Error) -> bool {
    let tls = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    matches!(
        tls,
        Some(rustls::Error::AlertReceived(
            rustls::AlertDescription::NoApplicationProtocol
        ))
    )
}

pub(super) fn head_error(e: ResponseError) -> ErrorKind {
    match e {
        ResponseError::MalformedStatusLine => ErrorKind::MalformedStatus,
        ResponseError::MalformedHeaders | ResponseError::BadContentLength => {
            ErrorKind::MalformedHeaders
        }
        ResponseError::TooLarge => ErrorKind::HeadTooLarge,
        ResponseError::BadChunk | ResponseError::ShortBody => ErrorKind::ShortBody,
    }
}

/// The error a final status counts as, if any: 4xx and 5xx, as wrk counts them (a 304 or a
/// redirect is a response), or with `--expect-status` every status not in its list.
pub(super) fn status_error(status: u16, expect: Option<&ExpectStatus>) -> Option<ErrorKind> {
    let error = match expect {
        None => status >= 400,
        Some(list) => !list.contains(status),
    };
    error.then_some(match status {
        100..=199 => ErrorKind::Status1xx,
        200..=299 => ErrorKind::Status2xx,
        300..=399 => ErrorKind::Status3xx,
        400..=499 => ErrorKind::Status4xx,
        _ => ErrorKind::Status5xx,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_sits_at_its_own_index() {
        for (i, kind) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(*kind as usize, i, "{kind:?}");
        }
    }

    #[test]
    fn statuses_are_errors_from_400_unless_a_list_says_otherwise() {
        assert_eq!(status_error(200, None), None);
        assert_eq!(status_error(304, None), None);
        assert_eq!(status_error(301, None), None);
        assert_eq!(status_error(404, None), Some(ErrorKind::Status4xx));
        assert_eq!(status_error(503, None), Some(ErrorKind::Status5xx));
        let list: ExpectStatus = "200,304".parse().unwrap();
        assert_eq!(status_error(304, Some(&list)), None);
        assert_eq!(status_error(204, Some(&list)), Some(ErrorKind::Status2xx));
        assert_eq!(status_error(301, Some(&list)), Some(ErrorKind::Status3xx));
        let list: ExpectStatus = "4xx".parse().unwrap();
        assert_eq!(status_error(404, Some(&list)), None);
    }
}
