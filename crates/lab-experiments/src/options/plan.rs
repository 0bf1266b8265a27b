//! What the options make of an experiment: the servers it measures (and why one is left out),
//! how many measurements it makes and about how long it takes.

use crate::{dynamic, syscalls, tls, Experiment, LabOptions, RTT_PAGES};
use lab_peers::PeerKind;
use std::time::Duration;

impl LabOptions {
    /// Servers an experiment runs: those of `servers` not [`left_out`](Self::left_out) of it.
    pub(crate) fn servers_for(&self, experiment: Experiment) -> Vec<PeerKind> {
        self.servers
            .iter()
            .copied()
            .filter(|&k| Self::left_out(k, experiment).is_none())
            .collect()
    }

    /// The servers of the run measured in at least one part of `experiment`, in order.
    pub(crate) fn servers_in(&self, experiment: Experiment) -> Vec<PeerKind> {
        self.servers
            .iter()
            .copied()
            .filter(|&k| (experiment.parts().iter()).any(|&p| Self::left_out(k, p).is_none()))
            .collect()
    }

    /// Why `kind` is not measured in `experiment` (a single one), when it is not.
    pub fn left_out(kind: PeerKind, experiment: Experiment) -> Option<&'static str> {
        match experiment {
            Experiment::Digest if !kind.supports_digest() => {
                Some("digest measures the servers with a Content-MD5 option: flint and Apache")
            }
            Experiment::Tls if !tls::SERVERS.contains(&kind) => Some(
                "tls measures flint, nginx, lighttpd and Apache with the event MPM (prefork's \
                 TLS is the same mod_ssl)",
            ),
            // Every server has dynamic deployments (those it lacks are rows `unsupported`).
            // Caddy joined the lab for the dynamic experiment (php_fastcgi, reverse_proxy), and
            // is in the page experiment as the other server that speaks HTTP/3.
            _ if kind == PeerKind::Caddy
                && !matches!(experiment, Experiment::Dynamic | Experiment::Syscalls) =>
            {
                Some("caddy is in the lab for the dynamic and syscalls experiments only")
            }
            Experiment::Sizes if kind == PeerKind::H2o => Some(
                "sizes does not measure h2o (it is in the lab for the syscalls page experiment)",
            ),
            _ => None,
        }
    }

    /// About how long `experiment` takes: each measurement's warm-up, its window and its
    /// setup (attaching and detaching a tracer, some 1.5 s; without one, the experiment's own:
    /// starting a server over TLS or reading the digest's document once). With `--pages` a
    /// window is that many pages at the experiment's cost of one ([`page_cost`]), and the
    /// syscalls experiment over a round trip counts its pages so too.
    pub fn estimate(&self, experiment: Experiment) -> Duration {
        let mut total = Duration::ZERO;
        for &part in experiment.parts() {
            let (page, untraced_setup) = page_cost(part);
            let setup = if self.profile {
                Duration::from_millis(1500)
            } else {
                untraced_setup
            };
            let per_run = |window: Duration| self.warmup + setup + window;
            let runs = self.runs(part) as u32;
            if part != Experiment::Syscalls {
                let window = match self.pages {
                    Some(n) => page * n.min(u32::MAX.into()) as u32,
                    None => self.duration,
                };
                // A dynamic measurement traces a second run of its own.
                let traced = part == Experiment::Dynamic && self.profile;
                let window = if traced { window * 2 } else { window };
                total += per_run(window) * runs;
                continue;
            }
            let per_rtt = runs / self.rtts.len().max(1) as u32;
            for &rtt in &self.rtts {
                let pages = self.pages.or((!rtt.is_zero()).then_some(RTT_PAGES));
                let window = match pages {
                    Some(n) => (page + rtt * 44) * n as u32,
                    None => self.duration,
                };
                total += per_run(window) * per_rtt;
            }
        }
        total
    }

    /// The first line a run prints: how many measurements of what, about how long, and the
    /// cores; of the servers in `self` (the run's, once those not installed are left out).
    pub(crate) fn first_line(&self, experiment: Experiment) -> String {
        let runs = self.runs(experiment);
        format!(
            "flint lab {}: {runs} measurement{} of {} (+{:.1} s warm-up), about {}; \
             servers on core {}, client on core {}",
            experiment.name(),
            if runs == 1 { "" } else { "s" },
            self.window_text(experiment),
            self.warmup.as_secs_f64(),
            about(self.estimate(experiment).as_secs_f64()),
            (self.server_cpu).map_or("(not pinned)".to_owned(), |c| c.to_string()),
            (self.client_cpu).map_or("(not pinned)".to_owned(), |c| c.to_string()),
        )
    }

    /// What each measurement measures: with `--pages` that many pages, in every experiment;
    /// otherwise a duration, beside the page experiment's own count over a round trip.
    fn window_text(&self, experiment: Experiment) -> String {
        let seconds = format!("{:.1} s", self.duration.as_secs_f64());
        let over_rtt = experiment.parts().contains(&Experiment::Syscalls)
            && self.rtts.iter().any(|r| !r.is_zero());
        match self.pages {
            Some(n) => format!("{n} pages"),
            None if over_rtt => format!("{seconds} ({RTT_PAGES} pages over a round trip)"),
            None => seconds,
        }
    }

    /// Measurements `experiment` makes.
    pub fn runs(&self, experiment: Experiment) -> usize {
        experiment
            .parts()
            .iter()
            .map(|&e| {
                let servers = self.servers_for(e);
                match e {
                    Experiment::Syscalls => {
                        let per_rtt: usize = servers
                            .iter()
                            .map(|&k| syscalls::runs_per_server(k, &self.page_modes))
                            .sum();
                        per_rtt * self.rtts.len()
                    }
                    Experiment::Sizes => self.sizes.len() * servers.len(),
                    Experiment::Tls => tls::runs_per_server(self) * servers.len(),
                    Experiment::Dynamic => {
                        dynamic::runs_per_server(self.tests.len(), &self.deployments)
                            * servers.len()
                    }
                    _ => servers.len(),
                }
            })
            .sum()
    }
}

/// A time estimate in the unit that reads best: `8 s`, `50 s`, `3 min` (never "1 min" for 3 s).
fn about(secs: f64) -> String {
    if secs < 90.0 {
        format!("{:.0} s", secs.ceil().max(1.0))
    } else {
        format!("{:.0} min", (secs / 60.0).round())
    }
}

/// What one page of `experiment` costs with `--pages`, and a measurement's setup without a
/// tracer: measured with flint and nginx on a two-core machine under a load of 10 (with the
/// lab's pinning, so a quiet machine is faster, not slower). A sizes page is one keep-alive
/// request of 40 clients, some 50 µs; a digest page a 6.5 MB document, with Apache's MD5 of it,
/// some 30 ms; a TLS page mostly a handshake on one core, some 2.5 ms; a microscape page 44
/// files, some 40 ms; a dynamic page some 1 ms (a CGI program started per request, the
/// FastCGI and static rows faster).
fn page_cost(experiment: Experiment) -> (Duration, Duration) {
    let us = Duration::from_micros;
    match experiment {
        Experiment::Syscalls => (us(40_000), us(300_000)),
        Experiment::Sizes => (us(50), us(50_000)),
        Experiment::Digest => (us(30_000), us(400_000)),
        Experiment::Tls => (us(2_500), us(300_000)),
        Experiment::Dynamic | Experiment::All => (us(1_000), us(100_000)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PageMode;

    #[test]
    fn with_pages_a_measurement_is_told_in_pages() {
        let mut opts = LabOptions::new(None);
        assert_eq!(opts.window_text(Experiment::Syscalls), "2.0 s");
        opts.rtts = vec![Duration::ZERO, Duration::from_millis(20)];
        assert_eq!(
            opts.window_text(Experiment::All),
            "2.0 s (5 pages over a round trip)"
        );
        assert_eq!(opts.window_text(Experiment::Sizes), "2.0 s");
        // --pages counts every experiment's measurements.
        opts.pages = Some(3);
        for experiment in [Experiment::Syscalls, Experiment::All, Experiment::Sizes] {
            assert_eq!(opts.window_text(experiment), "3 pages");
        }
    }

    #[test]
    fn an_estimate_is_in_seconds_until_a_minute_and_a_half() {
        assert_eq!(about(2.5), "3 s");
        assert_eq!(about(0.2), "1 s");
        assert_eq!(about(89.0), "89 s");
        assert_eq!(about(150.0), "3 min");
        assert_eq!(about(600.0), "10 min");
    }

    #[test]
    fn a_run_lists_only_the_servers_its_experiment_measures() {
        let opts = LabOptions::new(None);
        let sizes = opts.servers_in(Experiment::Sizes);
        assert!(sizes.contains(&PeerKind::Nginx) && sizes.contains(&PeerKind::Flint));
        for absent in [PeerKind::H2o, PeerKind::Caddy] {
            assert!(opts.servers.contains(&absent) && !sizes.contains(&absent));
        }
        assert_eq!(
            opts.servers_in(Experiment::Sizes),
            opts.servers_for(Experiment::Sizes)
        );
        assert_eq!(opts.servers_in(Experiment::All), opts.servers);
        let digest = opts.servers_in(Experiment::Digest);
        assert!(digest.iter().all(|k| k.supports_digest()), "{digest:?}");
    }

    #[test]
    fn pages_not_the_duration_make_the_syscalls_estimate() {
        let mut opts = LabOptions::new(None);
        opts.servers = vec![PeerKind::Flint];
        opts.page_modes = vec![PageMode::ALL[0]];
        opts.duration = Duration::from_secs(60);
        opts.warmup = Duration::from_millis(500);
        let runs = opts.runs(Experiment::Syscalls) as u32;
        assert!(runs > 0);
        assert_eq!(
            opts.estimate(Experiment::Syscalls),
            Duration::from_secs(62) * runs
        );
        // Three pages at no round trip: 40 ms each, the 60 s window unused.
        opts.pages = Some(3);
        assert_eq!(
            opts.estimate(Experiment::Syscalls),
            Duration::from_millis(2120) * runs
        );
        // The other experiments count pages too: three of the digest's document each.
        assert_eq!(
            opts.estimate(Experiment::Digest),
            Duration::from_millis(2090) * opts.runs(Experiment::Digest) as u32
        );
        // Without a tracer to attach and detach, a measurement's setup is shorter.
        opts.profile = false;
        assert_eq!(
            opts.estimate(Experiment::Digest),
            Duration::from_millis(990) * opts.runs(Experiment::Digest) as u32
        );
        opts.profile = true;
        opts.pages = None;
        assert_eq!(
            opts.estimate(Experiment::Digest),
            Duration::from_secs(62) * opts.runs(Experiment::Digest) as u32
        );
        // A dynamic measurement traces a second run of its own: two windows.
        let runs = opts.runs(Experiment::Dynamic) as u32;
        assert!(runs > 0);
        assert_eq!(
            opts.estimate(Experiment::Dynamic),
            Duration::from_secs(122) * runs
        );
        opts.profile = false;
        assert_eq!(
            opts.estimate(Experiment::Dynamic),
            Duration::from_millis(60_600) * runs
        );
    }

    #[test]
    fn with_pages_the_estimate_is_of_the_pages_an_experiment_fetches() {
        // Two servers' sizes sweep at 4000 pages each, no tracer, no warm-up: 24 measurements
        // of 4000 keep-alive requests from 40 clients, seconds in all on a loaded two-core
        // machine.
        let mut opts = LabOptions::new(None);
        opts.servers = vec![PeerKind::Flint, PeerKind::Nginx];
        opts.pages = Some(4000);
        opts.warmup = Duration::ZERO;
        opts.profile = false;
        let sizes = opts.estimate(Experiment::Sizes);
        assert!(sizes < Duration::from_secs(30), "{sizes:?}");
        // A page of the digest experiment is a 6.5 MB document, each a TLS handshake over
        // HTTPS's, and a page of the syscalls experiment 44 files: each costs more than one
        // small document.
        let per_page = |e: Experiment| {
            let mut o = opts.clone();
            o.pages = Some(1000);
            let long = o.estimate(e);
            o.pages = Some(100);
            (long - o.estimate(e)) / 900 / o.runs(e) as u32
        };
        let small = per_page(Experiment::Sizes);
        for e in [Experiment::Digest, Experiment::Tls, Experiment::Syscalls] {
            assert!(per_page(e) > small * 10, "{e:?}: {:?}", per_page(e));
        }
    }
}
