//! A bench run over HTTPS, in the summary: what TLS the connections agreed (version, cipher,
//! key exchange group, ALPN), how many handshakes there were and how many resumed a session, and whether the
//! certificates were checked. A run that skipped verification (`--insecure`) says so where the
//! figures are, since its server may not be the one the URL names.
//!
//! The handshake's time is in the WebSTONE totals, beside the paper's TCP connect time.

use super::benches;
use crate::html::{table, Col};
use crate::input::Input;
use crate::text::{self, esc};
use results::BenchResult;

/// Whether a bench result is of an `https://` run: any of its TLS records says so (older files
/// have none of them and are plain HTTP).
pub(super) fn is_https(b: &BenchResult) -> bool {
    b.config.target.scheme == "https"
        || b.config.tls.is_some()
        || b.summary.tls.is_some()
        || b.summary.tls_handshake_ms.is_some()
}

fn or_dash(x: Option<&str>) -> String {
    x.map_or_else(|| "–".to_owned(), esc)
}

/// The summary's HTTPS table: one row per bench result over TLS; empty when there is none.
pub fn summary(inputs: &[Input<'_>]) -> String {
    let rows: Vec<Vec<String>> = benches(inputs)
        .filter(|(_, b)| is_https(b))
        .map(|(i, b)| {
            let tls = b.summary.tls.clone().unwrap_or_default();
            let ratio =
                (tls.handshakes > 0).then(|| 100.0 * tls.resumed as f64 / tls.handshakes as f64);
            let asked = b.config.tls.as_ref();
            let certificates = match asked {
                Some(t) if !t.verify => {
                    r#"<span class="bad">NOT verified (--insecure)</span>"#.to_owned()
                }
                Some(t) => match &t.cacert {
                    Some(ca) => format!("verified (system roots and {})", esc(ca)),
                    None => "verified (system roots)".to_owned(),
                },
                None => "–".to_owned(),
            };
            let resumption = match asked {
                Some(t) if t.resume && t.early_data => {
                    "on (--tls-resume), 0-RTT (--early-data)".to_owned()
                }
                Some(t) if t.resume => "on (--tls-resume)".to_owned(),
                Some(_) => "off: a full handshake per connection".to_owned(),
                None => "–".to_owned(),
            };
            // As curl and h2load print them (the JSON keeps rustls's names).
            let named = tls.version.as_deref().map(results::tls_names::version);
            let version = match (named.as_deref(), asked.and_then(|t| t.version.as_deref())) {
                (Some(v), Some(pinned)) => format!("{} (--tls {})", esc(v), esc(pinned)),
                (v, _) => or_dash(v),
            };
            vec![
                format!(r#"<span class="file">{}</span>"#, esc(&i.label)),
                version,
                or_dash(tls.cipher.as_deref().map(results::tls_names::cipher)),
                or_dash(tls.kx.as_deref()),
                or_dash(tls.alpn.as_deref()),
                text::count(tls.handshakes as f64),
                text::count(tls.resumed as f64),
                text::opt(ratio),
                resumption,
                certificates,
            ]
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let cols = [
        Col("Result", false),
        Col("TLS version", false),
        Col("Cipher suite", false),
        Col("Key exchange", false),
        Col("ALPN", false),
        Col("Handshakes", true),
        Col("Resumed", true),
        Col("Resumed %", true),
        Col("Session resumption", false),
        Col("Certificates", false),
    ];
    let mut out = String::from("<h3>Over HTTPS</h3>");
    out.push_str(&table(&cols, &rows, "https"));
    out.push_str(r#"<p class="note">Handshakes: TLS handshakes completed in the measured window, full and resumed; resumed % = resumed / handshakes. Without session resumption every new connection is a full handshake, so the run measures the server's handshake cost.</p>"#);
    out
}
