//! flint's result documents, typed once.
//!
//! `flint bench`, `flint compare` and `flint lab` write JSON; `flint report`, `flint compare` and
//! the many-hosts coordinator read it back. Without one set of types each writer spelled its
//! fields in a `json!` literal and each reader walked `serde_json::Value` key by key, so a renamed
//! field broke a reader silently. This crate is that one set of types, derived with serde and used
//! both ways.
//!
//! It depends on nothing of flint's, so `bench` (which writes bench results), `lab` (compare and
//! lab results) and `report` (which reads all three and depends on neither) can all depend on it
//! without a cycle.
//!
//! Reading is lenient: every struct is `#[serde(default)]`, so a file written by an older flint,
//! which lacks later fields, still reads, and fields this version does not know are ignored. What
//! a missing field reads as is chosen per field: `Option` where absence means "not recorded" and
//! a reader must show a blank (a CPU figure, a TLS record, the machine's description); a plain
//! default where zero or empty is the honest value (a count of something an older flint did not
//! have, a list, a flag); a [`LatencySummary`] without samples has `count` 0. A field of the
//! wrong type is an error, never a silent zero. Writing is exact: the layout is described by
//! docs/bench-json.schema.json, which a test checks against real output.
//!
//! - [`bench`](mod@bench): one `flint bench` run ([`BenchResult`]), with [`hosts`] when it ran on many
//!   client hosts;
//! - [`compare`]: one `flint compare` run ([`CompareResult`]), its rounds bench summaries;
//! - [`lab`]: one `flint lab` run ([`LabResult`]), a row per measurement;
//! - [`latency`]: latency figures in milliseconds, percentile spectra;
//! - [`profile`]: a server's syscall profile over the measured window.

#![warn(missing_docs)]

pub mod bench;
pub mod compare;
pub mod hosts;
pub mod lab;
pub mod latency;
pub mod profile;
pub mod tls_names;

pub use bench::{
    BenchConfigRecord, BenchResult, BytesNotInResponses, Environment, Http2Record, Http3Record,
    PageRecord, RedirectsRecord, SecondRecord, StopKind, Summary, TargetRecord, TlsConfigRecord,
    TlsRecord, UrlRecord,
};
pub use compare::{
    CompareOptions, CompareResult, CompareTarget, CompareWorkload, FigureSpread, TargetKind,
    TargetStatus, WorkloadPage,
};
pub use hosts::{HostEarlyData, HostRecord, HostStatus};
pub use lab::{
    LabOptionsRecord, LabResult, LabRow, LabServer, PeerStatus, SyscallCount, TierCpu, WireCounts,
};
pub use latency::{LatencySummary, MinMeanMax, SpectrumPoint};
pub use profile::{ServerProfile, SyscallRow};

/// Version of the bench JSON layout (docs/bench-json.schema.json): bumped when a field is
/// renamed or removed; adding one is compatible.
pub const SCHEMA_VERSION: u64 = 3;

/// What wrote a result document (`"kind"` at its top level).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A bench file from before the field existed is a bench file.
    #[default]
    Bench,
    /// A `flint compare` document ([`CompareResult`]).
    Compare,
    /// A `flint lab` document ([`LabResult`]).
    Lab,
}

impl Kind {
    /// The word the JSON uses (`bench`, `compare`, `lab`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Bench => "bench",
            Kind::Compare => "compare",
            Kind::Lab => "lab",
        }
    }
}

/// How files are fetched over connections (also the engine's own option: one vocabulary).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum HttpMode {
    /// A new connection per file, `HTTP/1.0` without keep-alive, as the 1995 clients did.
    #[serde(rename = "http1.0")]
    Http10,
    /// `HTTP/1.1` persistent connection, one request at a time.
    #[default]
    #[serde(rename = "persistent")]
    KeepAlive,
    /// `HTTP/1.1`, all files of a page written at once on one connection (the Libwww robot).
    #[serde(rename = "pipelined")]
    Pipeline,
    /// HTTP/2: one connection per Webchild, a page's files as concurrent streams (ALPN `h2` over
    /// TLS, prior knowledge over cleartext).
    #[serde(rename = "http2")]
    Http2,
    /// HTTP/3: one QUIC connection per Webchild (https:// only), a page's files as concurrent
    /// streams.
    #[serde(rename = "http3")]
    Http3,
}

impl HttpMode {
    /// The word the JSON uses (`http1.0`, `persistent`, `pipelined`).
    pub fn name(self) -> &'static str {
        match self {
            HttpMode::Http10 => "http1.0",
            HttpMode::KeepAlive => "persistent",
            HttpMode::Pipeline => "pipelined",
            HttpMode::Http2 => "http2",
            HttpMode::Http3 => "http3",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mode_is_named_as_the_json_spells_it() {
        for mode in [
            HttpMode::Http10,
            HttpMode::KeepAlive,
            HttpMode::Pipeline,
            HttpMode::Http2,
            HttpMode::Http3,
        ] {
            let json = serde_json::to_value(mode).unwrap();
            assert_eq!(json, mode.name());
        }
    }
}
