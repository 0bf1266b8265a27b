//! `flint bench --hosts` over real ssh: an OpenSSH sshd started by the test on a free loopback
//! port, with host and user keys the test makes, listening on 127.0.0.1, .2 and .3: three hosts.

use crate::common;
use crate::hosts_support;

use common::run_bounded;
use hosts_support::{bench, exe, read_json, served, server, sum, LIMIT};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";

/// An sshd in a process group of its own, killed with it when the test ends, passed or not.
struct Sshd {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

/// Kills sshd's process group and reaps sshd.
fn kill_group(child: &mut Child) {
    if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = child.wait();
}

fn keygen(path: &Path) {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen (scripts/install-deps.sh installs openssh-client)");
    assert!(status.success());
}

fn start_sshd() -> Sshd {
    assert!(
        Path::new(SSHD).exists(),
        "{SSHD} is missing: scripts/install-deps.sh installs openssh-server"
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keygen(&d.join("host_key"));
    keygen(&d.join("id"));
    std::fs::copy(d.join("id.pub"), d.join("authorized_keys")).unwrap();
    // sshd must be given a port: one found free and released, which another test's server
    // (tests share this process) may take first. sshd then exits, or listens on fewer than
    // its three addresses: it is stopped and another port tried.
    for attempt in 1..=START_ATTEMPTS {
        let port = lab_process::free_port().unwrap();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nListenAddress 127.0.0.2\nListenAddress 127.0.0.3\n\
             HostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\nPidFile {d}/sshd.pid\n\
             StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
             PermitRootLogin prohibit-password\nAllowUsers *\n",
            d = d.display()
        );
        std::fs::write(d.join("sshd_config"), config).unwrap();
        // sshd insists on its privilege-separation directory.
        std::fs::create_dir_all("/run/sshd").unwrap();
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(d.join("sshd.log")).unwrap())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut child = child;
        match wait_listening(&mut child, port, d) {
            Ok(()) => return Sshd { child, port, dir },
            Err(why) if attempt < START_ATTEMPTS => {
                eprintln!("sshd on port {port}: {why}; another port");
                kill_group(&mut child);
            }
            Err(why) => {
                kill_group(&mut child);
                panic!("sshd on port {port}: {why}")
            }
        }
    }
    unreachable!("the last attempt returns or panics")
}

/// Start-up attempts, each on a port found free.
const START_ATTEMPTS: usize = 3;

/// Until sshd, and nothing else, listens on `port` on all three addresses. Err (with its log in
/// `dir`) if it exits or does not within a bounded wait.
fn wait_listening(sshd: &mut Child, port: u16, dir: &Path) -> Result<(), String> {
    let log = || std::fs::read_to_string(dir.join("sshd.log")).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = sshd.try_wait().unwrap() {
            return Err(format!("exited ({status}): {}", log()));
        }
        let all_hosts = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
            .iter()
            .all(|host| TcpStream::connect((*host, port)).is_ok());
        if all_hosts && lab_process::procfs::listens_only(sshd.id(), port) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("not listening on all of 127.0.0.1-3: {}", log()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn template(sshd: &Sshd) -> String {
    let key: PathBuf = sshd.dir.path().join("id");
    format!(
        "ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
         -o LogLevel=ERROR -i {} -p {} {{host}} {} worker",
        key.display(),
        sshd.port,
        exe()
    )
}

#[test]
fn three_hosts_over_ssh_fetch_exactly_n_pages_and_the_server_agrees() {
    let sshd = start_sshd();
    let (dir, server) = server();
    let json = dir.path().join("r.json");
    let out = run_bounded(
        bench(&server, &["-c", "6", "-n", "600", "-t", "1"])
            .args(["--hosts", "127.0.0.1,127.0.0.2,127.0.0.3"])
            .args([
                "--launch",
                &template(&sshd),
                "--json",
                json.to_str().unwrap(),
            ]),
        LIMIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc = read_json(&json);
    let hosts = doc["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 3);
    assert!(hosts.iter().all(|h| h["status"] == "ok"), "{hosts:?}");
    assert_eq!(doc["summary"]["requests"], 600, "merged count");
    assert_eq!(sum(hosts, "requests"), 600, "sum of hosts");
    assert_eq!(served(dir.path(), 600), 600, "server-side count");
    for h in hosts {
        println!(
            "{}: clock offset {} ms, start skew {} ms",
            h["name"], h["clock_offset_ms"], h["start_skew_ms"]
        );
    }
}

#[test]
fn a_host_whose_ssh_is_refused_is_named_and_nothing_starts() {
    let sshd = start_sshd();
    let (_dir, server) = server();
    // 127.0.0.4: nothing listens on the port there.
    let out = run_bounded(
        bench(
            &server,
            &["-c", "2", "-d", "1s", "--hosts", "127.0.0.1,127.0.0.4"],
        )
        .args(["--launch", &template(&sshd)]),
        LIMIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("127.0.0.4: exited before READY"),
        "{stderr}"
    );
    assert!(
        stderr.contains("refused"),
        "ssh's reason is quoted: {stderr}"
    );
    assert!(!stderr.contains("Sending GO"), "{stderr}");
}
