//! One client host of a run on many hosts (`flint bench --hosts`): what it ran and measured.

use crate::latency::LatencySummary;
use serde::{Deserialize, Serialize};

/// How a host's part of the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostStatus {
    /// Ran to the end and sent its full result.
    #[default]
    Ok,
    /// Started, then went away (channel closed, worker died, no heartbeat): not in the merge.
    Lost,
    /// Never started (cannot launch, refused, another version).
    Failed,
}

impl HostStatus {
    /// The word the JSON uses (`ok`, `lost`, `failed`).
    pub fn name(self) -> &'static str {
        match self {
            HostStatus::Ok => "ok",
            HostStatus::Lost => "lost",
            HostStatus::Failed => "failed",
        }
    }
}

/// One host's row of `hosts[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostRecord {
    /// As given in --hosts or the hosts file.
    pub name: String,
    /// Its share of the run's Webchildren.
    pub webchildren: u64,
    /// How its part of the run ended.
    pub status: HostStatus,
    /// Why it is lost or failed; `None` when ok.
    pub reason: Option<String>,
    /// Complete responses of its Webchildren in the window; a lost host: as its live figures last
    /// said (`known_until_s`).
    pub requests: u64,
    /// Pages its Webchildren completed in the window (0 for a lost host).
    pub pages: u64,
    /// Its failed requests of every kind in the window; a lost host: as its live figures last said.
    pub errors: u64,
    /// Its data moved: head and body bytes of its counted responses, the quantity of
    /// `summary.bytes_total` (the hosts' add up to it). Files before `bytes_read` was added held
    /// every byte read here. A lost host: 0 (its live figures know only the bytes it read).
    pub bytes_total: u64,
    /// Every byte it read in the window (HTTP/2 framing, chunk framing, unfinished responses
    /// included), the quantity of `summary.bytes_read`; a lost host: as its live figures last
    /// said. Absent in older files.
    pub bytes_read: Option<u64>,
    /// Its wall clock minus the coordinator's, from the control round trip with the least
    /// round-trip time (NTP's way).
    pub clock_offset_ms: Option<f64>,
    /// How late its first request began (its first connect): after the agreed start in the
    /// closed loop, after its page's intended time in the open loop.
    pub start_skew_ms: Option<f64>,
    /// An ok host whose figures are not what they seem: one that started late into its window
    /// (which still counts from the agreed start). Absent otherwise, and in older files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// The worker's own CPU (user + sys) per request: a saturated load generator shows here.
    pub client_cpu_us_per_request: Option<f64>,
    /// Its response times, as `summary.response_ms` counts them (empty for a lost or failed host).
    pub response_ms: LatencySummary,
    /// Requests completed in each second of the measured window, aligned on the agreed start.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requests_per_second: Vec<u64>,
    /// A lost host: how far into the measured window (s) it was last heard from. Its
    /// `requests`, `errors`, `bytes_read` and `requests_per_second` are then what its live
    /// figures, sent once a second, said it had done by then (to the second, warm-up taken
    /// out), not a measurement merged into the run's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub known_until_s: Option<f64>,
    /// An ok host of a run with `--early-data`: its HTTP/3 0-RTT figures, as `summary.http3`
    /// counts them (the hosts' add up to the summary's). Absent otherwise, and in older files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub early_data: Option<HostEarlyData>,
}

/// A host's HTTP/3 0-RTT figures (`summary.http3`'s `early_*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostEarlyData {
    /// Connections that sent requests in 0-RTT (`early_offered`).
    pub offered: u64,
    /// Of those, the ones whose 0-RTT the server accepted (`early_accepted`).
    pub accepted: u64,
    /// Of those, the ones whose 0-RTT the server rejected (`early_rejected`).
    pub rejected: u64,
    /// Requests sent in 0-RTT (`early_requests`).
    pub requests: u64,
}
