//! Why TLS handshakes failed, by reason: "the certificate was refused" says too little; these
//! say whether for an unknown issuer, a name, a date, or a CA certificate used as the server's
//! own, which is what a user has to know to fix the run, each with the fix in one line.

use rustls::CertificateError;
use std::io;
use std::path::Path;

use crate::TlsOptions;

/// The reason a handshake failed. The JSON key is the snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsFailure {
    /// The certificate's chain ends at no trusted root.
    UnknownIssuer,
    /// The server presented a CA certificate as its own (and it was not given with --cacert).
    CaUsedAsEndEntity,
    /// The certificate is not for the URL's host.
    NameMismatch,
    /// The certificate's validity ended before now.
    Expired,
    /// The certificate's validity starts after now.
    NotYetValid,
    /// Any other refusal of the certificate (bad signature, encoding, purpose, revoked).
    OtherCertificate,
    /// The server sent no certificate.
    NoCertificate,
    /// No TLS version (or cipher suite) both sides speak.
    ProtocolVersion,
    /// The server ended the handshake with an alert.
    AlertFromServer,
    /// What came back was not TLS (a plaintext server, say).
    NotTls,
    /// The connection was closed or reset during the handshake.
    Reset,
    /// Any other failure: a TLS error none of the above names, or an I/O error other than a
    /// close or reset.
    Other,
}

impl TlsFailure {
    /// Every reason, in declaration order: `reason as usize` is its index here, so a table of
    /// counts by reason has `ALL.len()` slots.
    pub const ALL: [TlsFailure; 12] = [
        TlsFailure::UnknownIssuer,
        TlsFailure::CaUsedAsEndEntity,
        TlsFailure::NameMismatch,
        TlsFailure::Expired,
        TlsFailure::NotYetValid,
        TlsFailure::OtherCertificate,
        TlsFailure::NoCertificate,
        TlsFailure::ProtocolVersion,
        TlsFailure::AlertFromServer,
        TlsFailure::NotTls,
        TlsFailure::Reset,
        TlsFailure::Other,
    ];

    /// The snake_case name: the JSON key, and the word summaries and error logs print.
    pub fn name(self) -> &'static str {
        match self {
            TlsFailure::UnknownIssuer => "unknown_issuer",
            TlsFailure::CaUsedAsEndEntity => "ca_used_as_end_entity",
            TlsFailure::NameMismatch => "name_mismatch",
            TlsFailure::Expired => "expired",
            TlsFailure::NotYetValid => "not_yet_valid",
            TlsFailure::OtherCertificate => "other_certificate",
            TlsFailure::NoCertificate => "no_certificate",
            TlsFailure::ProtocolVersion => "protocol_version",
            TlsFailure::AlertFromServer => "alert_from_server",
            TlsFailure::NotTls => "not_tls",
            TlsFailure::Reset => "reset",
            TlsFailure::Other => "other",
        }
    }

    /// A refusal of the server's certificate (what `--cacert` or `-k` would change).
    pub fn is_certificate(self) -> bool {
        matches!(
            self,
            TlsFailure::UnknownIssuer
                | TlsFailure::CaUsedAsEndEntity
                | TlsFailure::NameMismatch
                | TlsFailure::Expired
                | TlsFailure::NotYetValid
                | TlsFailure::OtherCertificate
                | TlsFailure::NoCertificate
        )
    }

    /// What it means and what to do, for the reports.
    pub fn explain(self) -> &'static str {
        match self {
            TlsFailure::UnknownIssuer => {
                "the certificate's issuer is not trusted: --cacert CA.pem (or -k to skip checks)"
            }
            TlsFailure::CaUsedAsEndEntity => {
                "the server presented a CA certificate as its own: give that certificate with \
                 --cacert (or -k)"
            }
            TlsFailure::NameMismatch => "the certificate is not for the URL's host",
            TlsFailure::Expired => "the certificate has expired",
            TlsFailure::NotYetValid => "the certificate is not valid yet",
            TlsFailure::OtherCertificate => "the certificate was refused",
            TlsFailure::NoCertificate => "the server sent no certificate",
            TlsFailure::ProtocolVersion => "no TLS version or cipher suite in common",
            TlsFailure::AlertFromServer => "the server ended the handshake with an alert",
            TlsFailure::NotTls => "the server did not answer in TLS (is it http://?)",
            TlsFailure::Reset => "the server closed or reset the connection",
            TlsFailure::Other => "another handshake failure",
        }
    }

    /// As [`explain`](Self::explain), knowing the `--cacert` file the run was given: what to do
    /// is never what was done already. A refused certificate with a file given means the file
    /// is neither the server's certificate nor its issuer.
    pub fn explain_with(self, cacert: Option<&Path>) -> String {
        match (self, cacert) {
            (TlsFailure::UnknownIssuer, Some(file)) => format!(
                "the certificate's issuer is not trusted: {} (--cacert) is not its issuer nor \
                 the server's certificate (or -k to skip checks)",
                file.display()
            ),
            (TlsFailure::CaUsedAsEndEntity, Some(file)) => format!(
                "the server presented a CA certificate as its own, not the one in {} \
                 (--cacert): give the server's certificate there (or -k)",
                file.display()
            ),
            _ => self.explain().to_owned(),
        }
    }

    /// As [`explain_with`](Self::explain_with), knowing every TLS option the run was given: no
    /// version or suite in common names the options that narrowed what was offered (`--tls
    /// 1.3`, `--tls-ciphers`), or says none did.
    pub fn explain_for(self, options: &TlsOptions) -> String {
        if self != TlsFailure::ProtocolVersion {
            return self.explain_with(options.cacert.as_deref());
        }
        let mut given = Vec::new();
        if let Some(version) = options.version {
            given.push(format!("--tls {}", version.as_str()));
        }
        if options.ciphers.is_some() {
            given.push("--tls-ciphers".to_owned());
        }
        match given.is_empty() {
            true => "no TLS version or cipher suite in common (TLS 1.2 and 1.3 offered, \
                     browsers' suites)"
                .to_owned(),
            false => format!(
                "no TLS version or cipher suite in common with what {} {}",
                given.join(" and "),
                if given.len() == 1 { "allows" } else { "allow" }
            ),
        }
    }

    /// Whether the server answered in TLS before it failed the handshake (its alert): it does
    /// speak TLS on that port, whatever else is wrong.
    pub fn server_speaks_tls(self) -> bool {
        matches!(
            self,
            TlsFailure::ProtocolVersion | TlsFailure::AlertFromServer
        ) || self.is_certificate()
    }

    /// The reason of a failed handshake, from the error the transport returned.
    pub fn of(e: &io::Error) -> TlsFailure {
        use rustls::{CertificateError as C, Error as E};
        let tls = e.get_ref().and_then(|inner| inner.downcast_ref::<E>());
        match tls {
            Some(E::InvalidCertificate(c)) => match c {
                C::UnknownIssuer => TlsFailure::UnknownIssuer,
                C::NotValidForName | C::NotValidForNameContext { .. } => TlsFailure::NameMismatch,
                C::Expired | C::ExpiredContext { .. } => TlsFailure::Expired,
                C::NotValidYet | C::NotValidYetContext { .. } => TlsFailure::NotYetValid,
                c if ca_used_as_end_entity(c) => TlsFailure::CaUsedAsEndEntity,
                _ => TlsFailure::OtherCertificate,
            },
            Some(E::NoCertificatesPresented) => TlsFailure::NoCertificate,
            Some(E::PeerIncompatible(_)) => TlsFailure::ProtocolVersion,
            Some(E::AlertReceived(a)) => TlsFailure::of_alert(u8::from(*a)),
            Some(E::InvalidMessage(_) | E::InappropriateMessage { .. }) => TlsFailure::NotTls,
            Some(_) => TlsFailure::Other,
            None => match e.kind() {
                io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::UnexpectedEof => TlsFailure::Reset,
                _ => TlsFailure::Other,
            },
        }
    }

    /// What the server's TLS alert `alert` says: 40 handshake_failure and 70 protocol_version
    /// are nothing in common with the client; any other is the server's own refusal.
    pub fn of_alert(alert: u8) -> TlsFailure {
        match alert {
            40 | 70 => TlsFailure::ProtocolVersion,
            _ => TlsFailure::AlertFromServer,
        }
    }
}

/// WebPKI's "CA used as end entity", which rustls passes on as an opaque other error.
pub fn ca_used_as_end_entity(e: &CertificateError) -> bool {
    matches!(e, CertificateError::Other(other) if format!("{:?}", other.0) == "CaUsedAsEndEntity")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TlsVersion;

    fn tls(e: rustls::Error) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, e)
    }

    #[test]
    fn no_version_or_suite_in_common_names_the_options_given() {
        let mut options = TlsOptions::default();
        let said = |o: &TlsOptions| TlsFailure::ProtocolVersion.explain_for(o);
        assert!(!said(&options).contains("--tls"), "{}", said(&options));
        options.version = Some(TlsVersion::Tls13);
        assert!(said(&options).ends_with("with what --tls 1.3 allows"));
        options.ciphers = Some(vec!["TLS13_AES_256_GCM_SHA384".into()]);
        assert!(said(&options).ends_with("with what --tls 1.3 and --tls-ciphers allow"));
        options.version = None;
        assert!(said(&options).ends_with("with what --tls-ciphers allows"));
        // The others as `explain_with` says them.
        assert_eq!(
            TlsFailure::NotTls.explain_for(&options),
            TlsFailure::NotTls.explain()
        );
        assert!(TlsFailure::ProtocolVersion.server_speaks_tls());
        assert!(TlsFailure::AlertFromServer.server_speaks_tls());
        assert!(!TlsFailure::NotTls.server_speaks_tls());
        assert!(!TlsFailure::Reset.server_speaks_tls());
    }

    #[test]
    fn each_refusal_has_its_reason() {
        use rustls::CertificateError as C;
        let cert = |c: C| TlsFailure::of(&tls(rustls::Error::InvalidCertificate(c)));
        assert_eq!(cert(C::UnknownIssuer), TlsFailure::UnknownIssuer);
        assert_eq!(cert(C::NotValidForName), TlsFailure::NameMismatch);
        assert_eq!(cert(C::Expired), TlsFailure::Expired);
        assert_eq!(cert(C::BadSignature), TlsFailure::OtherCertificate);
        let alert = tls(rustls::Error::AlertReceived(
            rustls::AlertDescription::ProtocolVersion,
        ));
        assert_eq!(TlsFailure::of(&alert), TlsFailure::ProtocolVersion);
        let alert = tls(rustls::Error::AlertReceived(
            rustls::AlertDescription::InternalError,
        ));
        assert_eq!(TlsFailure::of(&alert), TlsFailure::AlertFromServer);
        let eof = io::Error::from(io::ErrorKind::UnexpectedEof);
        assert_eq!(TlsFailure::of(&eof), TlsFailure::Reset);
    }
}
