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

    /// About how long `experiment` takes: each measurement's warm-up and window, and some 1.5 s
    /// to start its server and attach and detach a tracer (0.5 s with no tracer). With `--pages` a window is that many
    /// pages in every experiment, and in the syscalls experiment over a round trip too: guessed
    /// at 0.1 s a microscape page plus a round trip for each of its 44 files, and at 5 ms a
    /// page of the other experiments' single documents (a TLS handshake's time on one core).
    pub fn estimate(&self, experiment: Experiment) -> Duration {
        const ONE_FILE_PAGE: Duration = Duration::from_millis(5);
        let setup = Duration::from_millis(if self.profile { 1500 } else { 500 });
        let per_run = |window: Duration| self.warmup + setup + window;
        let mut total = Duration::ZERO;
        for &part in experiment.parts() {
            let runs = self.runs(part) as u32;
            if part != Experiment::Syscalls {
                let window = match self.pages {
                    Some(n) => ONE_FILE_PAGE.mul_f64(n as f64),
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
                    Some(n) => (Duration::from_millis(100) + rtt * 44) * n as u32,
                    None => self.duration,
                };
                total += per_run(window) * per_rtt;
            }
        }
        total
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PageMode;

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
        // Three pages at no round trip: 0.1 s each, the 60 s window unused.
        opts.pages = Some(3);
        assert_eq!(
            opts.estimate(Experiment::Syscalls),
            Duration::from_millis(2300) * runs
        );
        // The other experiments count pages too: three of one document each.
        assert_eq!(
            opts.estimate(Experiment::Digest),
            Duration::from_millis(2015) * opts.runs(Experiment::Digest) as u32
        );
        // Without a tracer to attach and detach, a measurement's setup is shorter.
        opts.profile = false;
        assert_eq!(
            opts.estimate(Experiment::Digest),
            Duration::from_millis(1015) * opts.runs(Experiment::Digest) as u32
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
            Duration::from_secs(61) * runs
        );
    }
}
