//! What each failure counts as: the error kinds of the statistics, from I/O errors, head parse
//! errors and statuses. Cold paths, kept out of the event loop's file.

use crate::stats::ErrorKind;
use std::io;
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
        ResponseError::MalformedHeaders
        | ResponseError::BadContentLength
        | ResponseError::TooLarge => ErrorKind::MalformedHeaders,
        ResponseError::BadChunk | ResponseError::ShortBody => ErrorKind::ShortBody,
    }
}

/// The error a final status counts as, if any (a 3xx is counted, not followed).
pub(super) fn status_error(status: u16) -> Option<ErrorKind> {
    match status {
        200..=299 => None,
        100..=199 => Some(ErrorKind::Status1xx),
        300..=399 => Some(ErrorKind::Status3xx),
        400..=499 => Some(ErrorKind::Status4xx),
        _ => Some(ErrorKind::Status5xx),
    }
}
