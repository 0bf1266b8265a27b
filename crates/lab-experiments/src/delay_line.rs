//! A delay line in user space, for kernels without `tc netem`: a TUN device whose reader holds
//! every packet for a fixed time and then writes it back.
//!
//! The page experiment's network path routes everything that crosses its middle namespace into
//! this device (`netpath.rs`); the kernel then routes what is written back as if it had arrived
//! on the device, on to its destination. So each packet, in either direction, is late by the
//! line's one-way delay, and a round trip by twice that. Packets leave in the order they came
//! (one constant delay keeps a FIFO in order). The queue is bounded, as a router's is: a packet
//! that finds it full is dropped (and counted), never allocated for.
//!
//! The line runs on a thread of its own, in the middle namespace, and stops when dropped: the
//! thread sees the flag within one [`TICK`] and closes the device, which the kernel then deletes.

use nix::poll::{ppoll, PollFd, PollFlags};
use nix::sys::time::TimeSpec;
use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest the line sleeps without looking at its stop flag.
pub const TICK: Duration = Duration::from_millis(20);
/// Packets held at once; a packet that finds the queue full is dropped. At 1500 bytes a packet
/// that is 6 MB: a 50 ms one-way delay holds a full 1 Gb/s.
pub const CAPACITY: usize = 4096;
/// The device's MTU, and so the largest packet (no offloads: TUN without a virtio header gets
/// every packet segmented).
pub const MTU: usize = 1500;

nix::ioctl_write_ptr_bad!(
    /// TUNSETIFF = _IOW('T', 202, int), as <linux/if_tun.h> defines it: names the TUN device a
    /// file of `/dev/net/tun` is and sets its flags.
    tun_set_iff,
    0x4004_54ca,
    libc::ifreq
);

/// A running delay line. Dropping it stops the thread and removes the device.
#[derive(Debug)]
pub struct DelayLine {
    name: String,
    one_way: Duration,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

/// What the line has done so far.
#[derive(Debug, Default)]
struct Counts {
    forwarded: AtomicU64,
    dropped: AtomicU64,
}

impl DelayLine {
    /// Creates TUN device `name` in the network namespace `netns` (its `/run/netns` file) and
    /// starts holding each packet read from it for `one_way` before writing it back. The device
    /// exists, down, when this returns: the caller brings it up and routes through it.
    pub fn start(netns: &File, name: &str, one_way: Duration) -> io::Result<DelayLine> {
        if name.len() >= libc::IFNAMSIZ || name.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("interface name {name:?}"),
            ));
        }
        let netns = netns.try_clone()?;
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let (ready_tx, ready_rx) = mpsc::channel();
        let thread = {
            let (name, stop, counts) = (name.to_owned(), stop.clone(), counts.clone());
            std::thread::Builder::new()
                .name("flint-delay-line".into())
                .spawn(move || {
                    // The line holds every packet for its delay and not more: a thread that
                    // waits for a core adds its wait to every packet (`priority.rs`). It ends
                    // raised: it is the line's own thread.
                    let _ = crate::priority::raise();
                    // This thread alone moves into the namespace; the device is made there.
                    let tun =
                        nix::sched::setns(netns.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)
                            .map_err(io::Error::from)
                            .and_then(|()| open_tun(&name));
                    let tun = match tun {
                        Ok(t) => {
                            let _ = ready_tx.send(Ok(()));
                            t
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(io::Error::new(e.kind(), e.to_string())));
                            return Err(e);
                        }
                    };
                    run(tun, one_way, &stop, &counts)
                })?
        };
        let line = DelayLine {
            name: name.to_owned(),
            one_way,
            stop,
            counts,
            thread: Some(thread),
        };
        match ready_rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Ok(())) => Ok(line),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the delay line's thread did not report",
            )),
        }
    }

    /// The TUN device's name, as routes and `ip` name it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How long each packet is held before it is written back.
    pub fn one_way(&self) -> Duration {
        self.one_way
    }

    /// Packets written back so far.
    pub fn forwarded(&self) -> u64 {
        self.counts.forwarded.load(Ordering::Relaxed)
    }

    /// Packets dropped so far because the queue was full ([`CAPACITY`]).
    pub fn dropped(&self) -> u64 {
        self.counts.dropped.load(Ordering::Relaxed)
    }

    /// Stops the line and says how its thread ended.
    pub fn stop(mut self) -> io::Result<()> {
        self.stop_thread()
    }

    fn stop_thread(&mut self) -> io::Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the delay line's thread panicked")),
            None => Ok(()),
        }
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        let _ = self.stop_thread();
    }
}

/// Opens `/dev/net/tun` as device `name` (layer 3, no packet-info header), non-blocking.
fn open_tun(name: &str) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open("/dev/net/tun")?;
    // SAFETY: ifreq is a plain C struct (arrays and a union of integers and pointers) for which
    // all-zero bytes are a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: the descriptor is the open TUN control file, and TUNSETIFF reads exactly one
    // ifreq from the pointer, which points at `req`, alive and initialized (name NUL-terminated:
    // shorter than IFNAMSIZ, checked by the caller, on zeroed bytes) for the whole call.
    unsafe { tun_set_iff(std::os::fd::AsRawFd::as_raw_fd(&file), &req) }?;
    Ok(file)
}

/// The line's loop: read what has arrived into the queue, stamped with when it may leave;
/// write back what is due; sleep until the next is due (or a packet arrives, or a tick).
fn run(mut tun: File, one_way: Duration, stop: &AtomicBool, counts: &Counts) -> io::Result<()> {
    let mut slots = vec![[0u8; MTU + 64]; CAPACITY].into_boxed_slice();
    // (due, slot, length) in arrival order; slot = arrival number % CAPACITY.
    let mut queue: VecDeque<(Instant, usize, usize)> = VecDeque::with_capacity(CAPACITY);
    let mut next_slot = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        while let Some(&(due, slot, len)) = queue.front() {
            if due > now {
                break;
            }
            queue.pop_front();
            match tun.write(&slots[slot][..len]) {
                Ok(_) => counts.forwarded.fetch_add(1, Ordering::Relaxed),
                // The stack would not take it (a full backlog): lost, as on a wire.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    counts.dropped.fetch_add(1, Ordering::Relaxed)
                }
                Err(e) => return Err(e),
            };
        }
        let wait = queue
            .front()
            .map_or(TICK, |&(due, _, _)| due.saturating_duration_since(now))
            .min(TICK);
        let mut fds = [PollFd::new(tun.as_fd(), PollFlags::POLLIN)];
        match ppoll(&mut fds, Some(TimeSpec::from_duration(wait)), None) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
        let arrived = Instant::now();
        loop {
            if queue.len() == CAPACITY {
                // Full: read and drop what comes until there is room.
                let mut scratch = [0u8; MTU + 64];
                match tun.read(&mut scratch) {
                    Ok(_) => {
                        counts.dropped.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
            let slot = next_slot % CAPACITY;
            match tun.read(&mut slots[slot]) {
                Ok(len) => {
                    queue.push_back((arrived + one_way, slot, len));
                    next_slot = next_slot.wrapping_add(1);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}
