//! A worker's clock offset, NTP's way: of several round trips over the control channel, the one
//! with the least round-trip time bounds the offset most tightly.
//!
//! Each probe: the coordinator's clock reads `sent` when the ping leaves and `received` when the
//! pong arrives; the worker's clock read `remote` in between. If the two legs took equal time,
//! `remote` was taken at `(sent + received) / 2` in the coordinator's clock, so
//! `offset = remote - (sent + received) / 2`, wrong by at most half the round trip.

/// One ping-pong, all in Unix µs (`remote` in the worker's clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// The coordinator's clock as the ping left (as its writer began writing it).
    pub sent: u64,
    /// The worker's clock as it answered (the pong's `clock_unix_us`).
    pub remote: u64,
    /// The coordinator's clock as the pong arrived (read by the reader thread on arrival).
    pub received: u64,
}

/// The estimate from the probe with the least round-trip time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offset {
    /// Worker's clock minus the coordinator's, µs.
    pub offset_us: i64,
    /// The round trip it came from, µs: the offset is right within half of it.
    pub rtt_us: u64,
}

/// The best estimate, or `None` without probes.
pub fn estimate(probes: &[Probe]) -> Option<Offset> {
    probes
        .iter()
        .filter(|p| p.received >= p.sent)
        .min_by_key(|p| p.received - p.sent)
        .map(|p| {
            let mid = (i128::from(p.sent) + i128::from(p.received)) / 2;
            Offset {
                offset_us: (i128::from(p.remote) - mid) as i64,
                rtt_us: p.received - p.sent,
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_round_trip_wins() {
        // The worker's clock is 5 s ahead; the second probe was delayed on its way back.
        let probes = [
            Probe {
                sent: 1_000,
                remote: 5_001_050,
                received: 1_100,
            },
            Probe {
                sent: 2_000,
                remote: 5_002_010,
                received: 2_900,
            },
            Probe {
                sent: 3_000,
                remote: 5_003_020,
                received: 3_040,
            },
        ];
        let o = estimate(&probes).unwrap();
        assert_eq!(o.rtt_us, 40);
        assert_eq!(o.offset_us, 5_000_000);
        assert_eq!(estimate(&[]), None);
    }

    #[test]
    fn a_worker_behind_has_a_negative_offset() {
        let p = Probe {
            sent: 10_000_000,
            remote: 7_000_100,
            received: 10_000_200,
        };
        assert_eq!(estimate(&[p]).unwrap().offset_us, -3_000_000);
    }
}
