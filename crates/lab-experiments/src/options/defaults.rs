//! The options' defaults: every server, the IO-Lite paper's sizes, a short window after a
//! warm-up, servers and client on cores of their own.

use crate::docroot;
use crate::{Database, Deployment, LabOptions, PageMode, PhpPrograms, DEFAULT_TESTS};
use lab_peers::PeerKind;
use std::path::PathBuf;
use std::time::Duration;

/// Default length of each measurement: `flint lab all` runs 247 of them (the page experiment's
/// 77: six ways for five servers over cleartext and TLS and h3 over TLS for flint, Apache prefork
/// over cleartext without h2, Caddy without h2 and with h3 over TLS; 5 x 12 sizes, 3 digest runs,
/// 4 x 11 over TLS, 7 x 9 dynamic), each with its warm-up, server and tracer start-up: about 18
/// minutes in all (docs/lab.md).
pub const DEFAULT_DURATION: Duration = Duration::from_secs(2);
/// Default warm-up before each measurement: the load runs, nothing is counted, so that
/// connections, pools and caches are in their steady state when the window opens.
pub const DEFAULT_WARMUP: Duration = Duration::from_millis(500);

impl LabOptions {
    /// Every server, the IO-Lite paper's sizes, the defaults above, servers on core 0 and the client on
    /// core 1 when this thread may use both.
    pub fn new(flint_bin: Option<PathBuf>) -> Self {
        let two = lab_process::cpu_allowed(0) && lab_process::cpu_allowed(1);
        LabOptions {
            duration: DEFAULT_DURATION,
            warmup: DEFAULT_WARMUP,
            servers: PeerKind::ALL.to_vec(),
            profile: true,
            method: None,
            sizes: docroot::IO_LITE_SIZES.to_vec(),
            server_cpu: two.then_some(0),
            client_cpu: two.then_some(1),
            rtts: vec![Duration::ZERO],
            page_modes: PageMode::ALL.to_vec(),
            pages: None,
            tests: DEFAULT_TESTS.map(str::to_owned).to_vec(),
            db: Database::Sqlite,
            deployments: Deployment::DEFAULT.to_vec(),
            php: PhpPrograms::default(),
            // flint-app is built beside flint (target/<profile>/, or an install's bin/).
            app_bin: flint_bin.as_ref().map(|f| f.with_file_name("flint-app")),
            flint_bin,
        }
    }
}
