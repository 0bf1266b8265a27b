//! The page experiment's network path: client and server in network namespaces of their own,
//! joined through a middle namespace by two veth pairs, with a round-trip delay where asked.
//!
//! ```text
//!  client ns            middle ns                         server ns
//!  c0 10.77.1.1 ─veth─ m0 10.77.1.2 │ m1 10.77.2.2 ─veth─ s0 10.77.2.1 (the peer listens here)
//!                                   └ dl0: the delay line (TUN), when netem is missing
//! ```
//!
//! Why this shape: packets and bytes are counted on the server's veth (`s0`), which carries
//! nothing but the experiment's traffic (loopback carries every other test's too), by the
//! kernel's own interface counters; every veth has `gso_max_segs 1`, so TCP hands the device
//! segments of one MSS each and a packet counted is a packet a wire would carry. The delay, when
//! asked, is `tc netem` on the middle namespace's two interfaces (half the round trip each way)
//! where the kernel has it; where it does not, the middle namespace routes everything it receives
//! on `m0` and `m1` into a TUN device whose reader (`delay_line.rs`) holds each packet half the
//! round trip and writes it back, and the kernel forwards it on from there.
//!
//! Everything is undone when the path is dropped (the delay line stopped, the namespaces
//! deleted, which deletes their interfaces), and a path left behind by a process that was killed
//! is removed by the next one (its namespaces carry the pid that made them).

use crate::delay_line::DelayLine;
use std::fs::File;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::AsFd;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The server's address on the path.
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 2, 1);
/// The client's address on the path.
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 1, 1);
/// The server's interface, in its namespace: the one whose counters are the wire's.
pub const SERVER_IF: &str = "s0";
/// Prefix of every namespace the lab makes (then the pid, a sequence number and the role).
const PREFIX: &str = "flint-lab-";
/// How long one `ip` or `tc` command may take.
const COMMAND_LIMIT: Duration = Duration::from_secs(20);

/// How the round trip's delay is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delay {
    /// No delay asked.
    None,
    /// `tc qdisc ... netem delay` on both interfaces of the middle namespace.
    Netem,
    /// The lab's user-space TUN delay line.
    DelayLine,
}

impl Delay {
    /// The name in the tables and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Delay::None => "none",
            Delay::Netem => "netem",
            Delay::DelayLine => "delay-line",
        }
    }
}

/// Why the path could not be made.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// An `ip` or `tc` command failed, did not end within its limit, or printed what could not
    /// be read.
    #[error("`{command}` failed: {why}")]
    Command {
        /// The command line, as it could be typed again.
        command: String,
        /// What it wrote to stderr, why it could not run, or what its output lacked.
        why: String,
    },
    /// A namespace could not be entered, or the delay line could not start.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The system's error.
        #[source]
        source: io::Error,
    },
}

/// Interface counters at one instant, as the kernel keeps them (frames, with their Ethernet
/// headers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Received by the server's interface: what the client sent.
    pub rx_packets: u64,
    /// Bytes of the frames received.
    pub rx_bytes: u64,
    /// Sent by the server's interface: what the server sent.
    pub tx_packets: u64,
    /// Bytes of the frames sent.
    pub tx_bytes: u64,
}

impl Counters {
    /// What was counted between `earlier` and `self`.
    pub fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            rx_packets: self.rx_packets.saturating_sub(earlier.rx_packets),
            rx_bytes: self.rx_bytes.saturating_sub(earlier.rx_bytes),
            tx_packets: self.tx_packets.saturating_sub(earlier.tx_packets),
            tx_bytes: self.tx_bytes.saturating_sub(earlier.tx_bytes),
        }
    }
}

/// A path made and running. Dropping it removes it.
#[derive(Debug)]
pub struct NetPath {
    client: String,
    middle: String,
    server: String,
    rtt: Duration,
    delay: Delay,
    line: Option<DelayLine>,
}

static SEQUENCE: AtomicUsize = AtomicUsize::new(0);

impl NetPath {
    /// Makes the path with round trip `rtt` added (zero: none).
    pub fn new(rtt: Duration) -> Result<NetPath, NetError> {
        remove_stale();
        let id = format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        );
        let mut path = NetPath {
            client: format!("{id}-c"),
            middle: format!("{id}-m"),
            server: format!("{id}-s"),
            rtt,
            delay: Delay::None,
            line: None,
        };
        // From here on, dropping `path` removes whatever was made.
        for ns in [&path.client, &path.middle, &path.server] {
            ip(&["netns", "add", ns])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            // IPv4 only: no neighbour discovery or multicast reports on the counted interface.
            sysctl(ns, "net.ipv6.conf.all.disable_ipv6=1")?;
            sysctl(ns, "net.ipv6.conf.default.disable_ipv6=1")?;
        }
        let (c, m, s) = (&path.client, &path.middle, &path.server);
        ip(&[
            "link", "add", "c0", "netns", c, "type", "veth", "peer", "name", "m0", "netns", m,
        ])?;
        ip(&[
            "link", "add", SERVER_IF, "netns", s, "type", "veth", "peer", "name", "m1", "netns", m,
        ])?;
        for (ns, dev, addr) in [
            (c, "c0", "10.77.1.1/24"),
            (m, "m0", "10.77.1.2/24"),
            (m, "m1", "10.77.2.2/24"),
            (s, SERVER_IF, "10.77.2.1/24"),
        ] {
            ip(&["-n", ns, "addr", "add", addr, "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "gso_max_segs", "1", "up"])?;
        }
        ip(&["-n", c, "route", "add", "default", "via", "10.77.1.2"])?;
        ip(&["-n", s, "route", "add", "default", "via", "10.77.2.2"])?;
        sysctl(m, "net.ipv4.ip_forward=1")?;
        if !rtt.is_zero() {
            let half = rtt / 2;
            path.delay = if netem(m, half).is_ok() {
                Delay::Netem
            } else {
                path.line = Some(delay_line(m, half)?);
                Delay::DelayLine
            };
        }
        Ok(path)
    }

    /// The round trip asked for, and how it is made.
    pub fn rtt(&self) -> Duration {
        self.rtt
    }

    /// How the round trip's delay is made: netem, the delay line, or none.
    pub fn delay(&self) -> Delay {
        self.delay
    }

    /// The namespace the peer runs in.
    pub fn server_netns(&self) -> &str {
        &self.server
    }

    /// The namespace the client (bench's measuring thread) runs in.
    pub fn client_netns(&self) -> &str {
        &self.client
    }

    /// Packets the delay line dropped because its queue was full (0 without one).
    pub fn dropped(&self) -> u64 {
        self.line.as_ref().map_or(0, DelayLine::dropped)
    }

    /// Moves the calling thread into the client's namespace until the guard is dropped (threads
    /// it starts meanwhile, such as bench's, start there too and stay).
    pub fn enter_client(&self) -> Result<NsGuard, NetError> {
        NsGuard::enter(&self.client)
    }

    /// The same for the server's namespace (a test's own listener).
    pub fn enter_server(&self) -> Result<NsGuard, NetError> {
        NsGuard::enter(&self.server)
    }

    /// The round trip as TCP sees it: the median time of `n` connects to `addr` (a server
    /// listening on the path), from the calling thread, which must be in the client namespace.
    ///
    /// The connects run raised as the delay line does (`priority.rs`: real-time when allowed,
    /// as root, as the namespaces need): a thread that waits for a core after each SYN-ACK
    /// adds that wait to the round trip. The thread is put back as it was after.
    pub fn probe_rtt(addr: std::net::SocketAddr, n: usize) -> io::Result<Duration> {
        let raised = crate::priority::raise();
        let mut times = Vec::with_capacity(n);
        let mut probe = || -> io::Result<()> {
            for _ in 0..n.max(1) {
                let t = std::time::Instant::now();
                let s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
                times.push(t.elapsed());
                drop(s);
            }
            Ok(())
        };
        let probed = probe();
        raised.restore()?;
        probed?;
        times.sort();
        Ok(times[times.len() / 2])
    }

    /// The server interface's counters now.
    pub fn counters(&self) -> Result<Counters, NetError> {
        let args = [
            "-n",
            &self.server,
            "-j",
            "-s",
            "link",
            "show",
            "dev",
            SERVER_IF,
        ];
        let out = ip(&args)?;
        parse_counters(&out).ok_or_else(|| NetError::Command {
            command: format!("ip {}", args.join(" ")),
            why: format!("no stats64 in {out:?}"),
        })
    }
}

impl Drop for NetPath {
    fn drop(&mut self) {
        if let Some(line) = self.line.take() {
            let _ = line.stop();
        }
        for ns in [&self.client, &self.middle, &self.server] {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

/// The calling thread in another network namespace; dropping it moves the thread back.
#[derive(Debug)]
pub struct NsGuard {
    home: File,
}

impl NsGuard {
    fn enter(netns: &str) -> Result<NsGuard, NetError> {
        let io = |what: &str| {
            let what = what.to_owned();
            move |source| NetError::Io { what, source }
        };
        let home = File::open("/proc/thread-self/ns/net").map_err(io("this thread's namespace"))?;
        let target = File::open(format!("/run/netns/{netns}")).map_err(io(netns))?;
        nix::sched::setns(target.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)
            .map_err(|e| io(&format!("entering {netns}"))(e.into()))?;
        Ok(NsGuard { home })
    }
}

impl Drop for NsGuard {
    fn drop(&mut self) {
        let _ = nix::sched::setns(self.home.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET);
    }
}

/// `tc netem` on both of the middle namespace's interfaces: `half` each way.
fn netem(middle: &str, half: Duration) -> Result<(), NetError> {
    let delay = format!("{}us", half.as_micros());
    for dev in ["m0", "m1"] {
        run(
            "tc",
            &[
                "-n", middle, "qdisc", "add", "dev", dev, "root", "netem", "delay", &delay,
                "limit", "100000",
            ],
        )?;
    }
    Ok(())
}

/// The TUN delay line in the middle namespace, and the policy routes that send everything
/// arriving on `m0` or `m1` into it (what it writes back arrives on `dl0` and is routed by the
/// main table, to its destination's veth).
fn delay_line(middle: &str, half: Duration) -> Result<DelayLine, NetError> {
    let ns = File::open(format!("/run/netns/{middle}")).map_err(|source| NetError::Io {
        what: middle.to_owned(),
        source,
    })?;
    let line = DelayLine::start(&ns, "dl0", half).map_err(|source| NetError::Io {
        what: "starting the delay line (/dev/net/tun)".into(),
        source,
    })?;
    ip(&["-n", middle, "link", "set", "dl0", "mtu", "1500", "up"])?;
    ip(&[
        "-n", middle, "route", "add", "default", "dev", "dl0", "table", "100",
    ])?;
    for dev in ["m0", "m1"] {
        ip(&["-n", middle, "rule", "add", "iif", dev, "lookup", "100"])?;
    }
    // Packets coming back from dl0 have sources the main table routes elsewhere: no
    // reverse-path filter on that.
    for key in ["all", "default", "dl0"] {
        sysctl(middle, &format!("net.ipv4.conf.{key}.rp_filter=0"))?;
    }
    Ok(line)
}

/// Deletes the namespaces of lab processes that are gone.
fn remove_stale() {
    let Ok(entries) = std::fs::read_dir("/run/netns") else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = ip(&["netns", "del", &name]);
        }
    }
}

fn sysctl(netns: &str, setting: &str) -> Result<String, NetError> {
    run("ip", &["netns", "exec", netns, "sysctl", "-qw", setting])
}

fn ip(args: &[&str]) -> Result<String, NetError> {
    run("ip", args)
}

/// Runs a command to completion within [`COMMAND_LIMIT`]; its stdout, or why it failed.
fn run(program: &str, args: &[&str]) -> Result<String, NetError> {
    let command = format!("{program} {}", args.join(" "));
    let out = lab_process::output_within(Command::new(program).args(args), COMMAND_LIMIT).map_err(
        |e| NetError::Command {
            command: command.clone(),
            why: e.to_string(),
        },
    )?;
    if !out.status.success() {
        return Err(NetError::Command {
            command,
            why: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The counters of `ip -j -s link show` (one interface).
fn parse_counters(json: &str) -> Option<Counters> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let stats = v.get(0)?.get("stats64")?;
    let n = |dir: &str, key: &str| stats.get(dir)?.get(key)?.as_u64();
    Some(Counters {
        rx_packets: n("rx", "packets")?,
        rx_bytes: n("rx", "bytes")?,
        tx_packets: n("tx", "packets")?,
        tx_bytes: n("tx", "bytes")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_come_from_ip_s_json_and_subtract() {
        let json = r#"[{"ifindex":5,"ifname":"s0","stats64":{"rx":{"bytes":2000,"packets":20,
            "errors":0},"tx":{"bytes":90000,"packets":70,"errors":0}}}]"#;
        let c = parse_counters(json).expect("parsed");
        assert_eq!(
            c,
            Counters {
                rx_packets: 20,
                rx_bytes: 2000,
                tx_packets: 70,
                tx_bytes: 90000
            }
        );
        let before = Counters {
            rx_packets: 5,
            rx_bytes: 500,
            tx_packets: 10,
            tx_bytes: 1000,
        };
        assert_eq!(c.since(&before).tx_bytes, 89000);
        assert_eq!(parse_counters("[]"), None);
        assert_eq!(parse_counters("not json"), None);
    }
}
