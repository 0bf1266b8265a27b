//! HTTP Basic authentication (RFC 7617) by path prefix, checked where a request is resolved,
//! before files or programs: `--basic-auth PREFIX=FILE` and `[[auth]]` in the config.
//!
//! A bcrypt check costs milliseconds (about 2 ms at htpasswd's default cost 5, 50 ms at cost 10:
//! docs/serve.md), and it runs on the event loop's thread: every other connection of that thread
//! waits meanwhile. So a password is checked once: each thread keeps the credentials it verified
//! (`Guard`), keyed by the SHA-256 of the whole `Authorization` value (never the password
//! itself), bounded ([`MAX_VERIFIED`]) and expiring (`auth_cache_ms`), and a request that brings
//! them again costs a hash and a lookup. What a thread verifies it also puts in a set the threads
//! share (`Shared::verified`, bounded the same way), which a thread reads, under its lock, only
//! when its own cache misses: so a credential let in on one thread goes in on the others with no
//! check, even from an address the limiter holds. Wrong credentials are limited per client address
//! (`Limiter`, shared by the threads and touched only when a check is due): past
//! `auth_max_failures` within `auth_failure_window_ms`, credentials not verified already get 429
//! with `Retry-After` and no check, so a flood of guesses cannot hold a loop for long. Guesses
//! from many addresses (a botnet, the /64s of an IPv6 /48) get past a count per address, so each
//! thread also runs at most `auth_max_checks_per_second` checks (`CheckBudget`): past it,
//! credentials not verified already get 429 unchecked, and the loop's share of time spent
//! hashing stays bounded (50 bcrypt checks of cost 5 a second: about a tenth of a core). The
//! budget counts time too: a check starts only while the thread's time spent hashing is within
//! [`HASHING_SHARE`] of its time (after a burst of [`HASHING_BURST`]), so even slow hashes (the
//! files allow bcrypt up to cost 14, about a second a check) leave a thread to its connections
//! most of the time; a hash slower than that is refused when the file is read.
//!
//! A wrong password and an unknown user get the same 401: an unknown user's password is checked
//! against a real hash of the file (`htpasswd.rs`), so both cost the same, and the hashes are
//! compared in constant time. The htpasswd files are read at start: a changed file is seen after
//! a restart.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use sha2::{Digest, Sha256};
use wire::Request;
use zeroize::Zeroizing;

use crate::config::Config;
use crate::resolve;
use crate::stats::ServerStats;
pub use htpasswd::HtpasswdError;
use htpasswd::Users;

mod htpasswd;

/// Credentials each thread keeps verified; past it the one that expires first makes room.
pub const MAX_VERIFIED: usize = 1024;
/// Client addresses (IPv6 by /64) whose failures are counted; past it, with every count still
/// in its window, a new address goes uncounted (the check budget still bounds it).
pub const MAX_TRACKED: usize = 16 * 1024;
/// An `Authorization` value longer than this is refused unread (a user and password of a few
/// hundred bytes fit many times over).
const MAX_CREDENTIALS: usize = 4096;

/// What start-up found wrong with the authentication settings.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// An htpasswd file could not be read, or a line of it is not understood.
    #[error(transparent)]
    File(#[from] HtpasswdError),
    /// Two zones name the same prefix (normalised); which file would decide is not guessed.
    #[error("`auth` prefix {0} is protected twice")]
    DuplicatePrefix(String),
}

/// A protected prefix, as the threads share it.
#[derive(Debug)]
struct Zone {
    /// Normalised: `/private`, or `/` for everything.
    prefix: Box<[u8]>,
    /// Index in [`Shared::files`].
    file: usize,
    /// `WWW-Authenticate: Basic realm="...", charset="UTF-8"\r\n`.
    challenge: Rc<[u8]>,
}

/// A protected prefix as read at start; each thread makes its [`Zone`] of it.
#[derive(Debug)]
struct ZoneSpec {
    prefix: Box<[u8]>,
    file: usize,
    challenge: Box<[u8]>,
}

/// What the threads share: the files' users (read-only) and the failure counts.
#[derive(Debug)]
pub(crate) struct Shared {
    zones: Vec<ZoneSpec>,
    files: Vec<Users>,
    limiter: Mutex<Limiter>,
    /// Every thread's verified credentials, looked up only when a thread's own cache misses
    /// (never on the path of a request it has seen): so a credential one thread let in goes in
    /// on the others with no hash, even while its address is limited.
    verified: Mutex<HashMap<(usize, [u8; 32]), SharedVerified>>,
    cache_for: Duration,
    checks_per_second: u32,
}

impl Shared {
    /// Reads every zone's file; `None` when no prefix is protected.
    pub(crate) fn load(config: &Config) -> Result<Option<Arc<Shared>>, AuthError> {
        if config.auth.is_empty() {
            return Ok(None);
        }
        let mut paths: Vec<PathBuf> = Vec::new();
        let mut files = Vec::new();
        let mut zones: Vec<ZoneSpec> = Vec::new();
        for zone in &config.auth {
            let prefix: Box<[u8]> = zone.prefix.as_bytes().into();
            if zones.iter().any(|z| z.prefix == prefix) {
                return Err(AuthError::DuplicatePrefix(zone.prefix.clone()));
            }
            let file = match paths.iter().position(|p| *p == zone.file) {
                Some(i) => i,
                None => {
                    files.push(Users::read(&zone.file)?);
                    paths.push(zone.file.clone());
                    files.len() - 1
                }
            };
            let challenge = format!("Basic realm=\"{}\", charset=\"UTF-8\"", zone.realm);
            zones.push(ZoneSpec {
                prefix,
                file,
                challenge: challenge.into_bytes().into(),
            });
        }
        Ok(Some(Arc::new(Shared {
            zones,
            files,
            limiter: Mutex::new(Limiter::new(
                config.auth_max_failures,
                Duration::from_millis(config.auth_failure_window_ms),
            )),
            verified: Mutex::new(HashMap::new()),
            cache_for: Duration::from_millis(config.auth_cache_ms),
            checks_per_second: config.auth_max_checks_per_second.max(1),
        })))
    }
}

/// A request's answer as far as authentication goes.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// Not under a protected prefix.
    Open,
    /// Under one, by this user.
    Allowed(Rc<[u8]>),
    /// Under one, refused: 401 with the challenge, or 429 with `Retry-After`.
    Denied(Denial),
}

impl Verdict {
    /// The user a request was allowed as (the access log's third field, CGI's `REMOTE_USER`).
    pub(crate) fn user(&self) -> Option<&[u8]> {
        match self {
            Verdict::Allowed(user) => Some(user),
            _ => None,
        }
    }
}

/// A refused request: its status and the field that goes with it.
#[derive(Debug)]
pub(crate) enum Denial {
    /// The `WWW-Authenticate` field's value.
    Challenge(Rc<[u8]>),
    /// Seconds until the client's failure window ends.
    Limited(u64),
}

impl Denial {
    /// Counts a denial where it is answered (401 or 429), by whether the request carried
    /// credentials: one the server answered otherwise (413 for its body, say) is counted by
    /// that answer, not here.
    pub(crate) fn count(&self, had_credentials: bool, stats: &mut ServerStats) {
        match self {
            Denial::Limited(_) => stats.auth_limited += 1,
            Denial::Challenge(_) if had_credentials => stats.auth_failed += 1,
            Denial::Challenge(_) => stats.auth_missing += 1,
        }
    }

    pub(crate) fn status(&self) -> u16 {
        match self {
            Denial::Challenge(_) => 401,
            Denial::Limited(_) => 429,
        }
    }
}

/// One credential verified by this thread.
#[derive(Debug)]
struct Verified {
    user: Rc<[u8]>,
    until: Instant,
}

/// One credential verified by some thread, as the threads share it.
#[derive(Debug)]
struct SharedVerified {
    user: Arc<[u8]>,
    until: Instant,
}

/// One event-loop thread's side: the zones with their challenges, the credentials it
/// verified, and a buffer for the normalised path.
pub(crate) struct Guard {
    shared: Arc<Shared>,
    zones: Vec<Zone>,
    /// By file and the SHA-256 of the `Authorization` value.
    verified: HashMap<(usize, [u8; 32]), Verified>,
    path: Vec<u8>,
    budget: CheckBudget,
}

/// A thread's password checks per second, as a token bucket: `per_second` tokens, one second's
/// worth at most (a burst of a second's checks, then the rate). And the time they take, as a
/// second bucket: a check starts only while the thread's hashing time is within
/// [`HASHING_BURST`] plus [`HASHING_SHARE`] of the time since (a check cannot be cut short, so
/// one may overdraw it, and the next waits until it is paid back). A count alone would not
/// bound the time: 50 checks a second at bcrypt cost 14 are a minute of CPU.
#[derive(Debug)]
pub(crate) struct CheckBudget {
    per_second: f64,
    tokens: f64,
    /// Seconds of hashing the thread may start now (negative: owed by the last check).
    hashing: f64,
    at: Option<Instant>,
}

/// The share of a thread's time its password checks may take, over a few seconds: the rest is
/// its connections'.
pub const HASHING_SHARE: f64 = 0.2;
/// Seconds of hashing a thread may spend at once (a burst of logins) before the share applies.
pub const HASHING_BURST: f64 = 0.5;

impl CheckBudget {
    pub(crate) fn new(per_second: u32) -> CheckBudget {
        let per_second = f64::from(per_second.max(1));
        CheckBudget {
            per_second,
            tokens: per_second,
            hashing: HASHING_BURST,
            at: None,
        }
    }

    /// Takes one check if the budget has one now: a token, and hashing time left. Else the
    /// whole seconds until it would have one (the `Retry-After` of the refusal, at least 1).
    pub(crate) fn take(&mut self, now: Instant) -> Result<(), u64> {
        if let Some(at) = self.at {
            let secs = now.saturating_duration_since(at).as_secs_f64();
            self.tokens = (self.tokens + secs * self.per_second).min(self.per_second);
            self.hashing = (self.hashing + secs * HASHING_SHARE).min(HASHING_BURST);
        }
        self.at = Some(now);
        if self.tokens >= 1.0 && self.hashing > 0.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        let for_token = (1.0 - self.tokens).max(0.0) / self.per_second;
        let for_time = (-self.hashing).max(0.0) / HASHING_SHARE;
        Err((for_token.max(for_time).ceil() as u64).max(1))
    }

    /// A check took `took` of the thread's CPU: what it took is owed before the next starts.
    pub(crate) fn spent(&mut self, took: Duration) {
        self.hashing -= took.as_secs_f64();
    }
}

impl Guard {
    pub(crate) fn new(shared: Arc<Shared>) -> Guard {
        let zones = (shared.zones.iter())
            .map(|z| Zone {
                prefix: z.prefix.clone(),
                file: z.file,
                challenge: Rc::from(&z.challenge[..]),
            })
            .collect();
        Guard {
            budget: CheckBudget::new(shared.checks_per_second),
            shared,
            zones,
            verified: HashMap::with_capacity(64),
            path: Vec::with_capacity(256),
        }
    }

    /// Whether `req` from `peer` may go on to files or programs.
    pub(crate) fn check(
        &mut self,
        req: &Request<'_>,
        peer: IpAddr,
        now: Instant,
        stats: &mut ServerStats,
    ) -> Verdict {
        // A target that does not normalise is refused (400) by whatever answers it, file or
        // program, with the same normaliser: there is nothing to protect.
        if resolve::normalise(req.target, &mut self.path).is_err() {
            return Verdict::Open;
        }
        let Some(zone) = self.zone_of_path() else {
            return Verdict::Open;
        };
        let (file, challenge) = (self.zones[zone].file, &self.zones[zone].challenge);
        let Some(value) = req.authorization else {
            return Verdict::Denied(Denial::Challenge(challenge.clone()));
        };
        let key = (file, Sha256::digest(value).into());
        if let Some(v) = self.verified.get(&key).filter(|v| v.until > now) {
            stats.auth_ok += 1;
            stats.auth_cached += 1;
            return Verdict::Allowed(v.user.clone());
        }
        let challenge = challenge.clone();
        if let Some((user, until)) = self.verified_elsewhere(&key, now) {
            stats.auth_ok += 1;
            stats.auth_cached += 1;
            self.remember(key, user.clone(), now, until);
            return Verdict::Allowed(user);
        }
        let limiter = || {
            self.shared
                .limiter
                .lock()
                .unwrap_or_else(|e| e.into_inner())
        };
        if let Err(secs) = limiter().begin(peer, now) {
            return Verdict::Denied(Denial::Limited(secs));
        }
        if let Err(secs) = self.budget.take(now) {
            limiter().passed(peer, now);
            return Verdict::Denied(Denial::Limited(secs));
        }
        let users = &self.shared.files[file];
        let started = thread_cpu();
        let matched = credentials(value).and_then(|(user, password)| {
            let (hash, known) = users.hash_of(&user);
            // Checked whether or not the user is known: both cost one hash.
            (hash.verify(&password) && known).then_some(user)
        });
        self.budget.spent(thread_cpu().saturating_sub(started));
        match matched {
            Some(user) => {
                limiter().passed(peer, now);
                stats.auth_ok += 1;
                let until = now + self.shared.cache_for;
                self.share(key, Arc::from(&user[..]), now, until);
                let user: Rc<[u8]> = user.into();
                self.remember(key, user.clone(), now, until);
                Verdict::Allowed(user)
            }
            // Counted as it began (`Limiter::begin`).
            None => Verdict::Denied(Denial::Challenge(challenge)),
        }
    }

    /// Whether `target` is under a protected prefix (a target that does not normalise is not:
    /// whatever answers it refuses it).
    pub(crate) fn protects(&mut self, target: &[u8]) -> bool {
        resolve::normalise(target, &mut self.path).is_ok() && self.zone_of_path().is_some()
    }

    /// The zone of the longest prefix that holds the normalised path, segment by segment
    /// (`/private` holds `/private` and `/private/a`, not `/privateer`).
    fn zone_of_path(&self) -> Option<usize> {
        let path = &self.path[..];
        let holds = |prefix: &[u8]| {
            prefix == b"/"
                || (path.starts_with(prefix)
                    && (path.len() == prefix.len() || path[prefix.len()] == b'/'))
        };
        (self.zones.iter().enumerate())
            .filter(|(_, z)| holds(&z.prefix))
            .max_by_key(|(_, z)| z.prefix.len())
            .map(|(i, _)| i)
    }

    /// Keeps a verified credential until `until`; when full, drops the expired ones, then the
    /// one that expires first.
    fn remember(&mut self, key: (usize, [u8; 32]), user: Rc<[u8]>, now: Instant, until: Instant) {
        make_room(&mut self.verified, &key, now, |v| v.until);
        self.verified.insert(key, Verified { user, until });
    }

    /// The user and expiry of a credential another thread verified, if one did.
    fn verified_elsewhere(
        &self,
        key: &(usize, [u8; 32]),
        now: Instant,
    ) -> Option<(Rc<[u8]>, Instant)> {
        let shared = self
            .shared
            .verified
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let v = shared.get(key).filter(|v| v.until > now)?;
        Some((Rc::from(&v.user[..]), v.until))
    }

    /// Tells the other threads of a credential this one verified.
    fn share(&self, key: (usize, [u8; 32]), user: Arc<[u8]>, now: Instant, until: Instant) {
        let mut shared = self
            .shared
            .verified
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        make_room(&mut shared, &key, now, |v| v.until);
        shared.insert(key, SharedVerified { user, until });
    }
}

/// Room for `key` in a cache of verified credentials bounded by [`MAX_VERIFIED`]: when full,
/// the expired ones go, then the one that expires first.
fn make_room<V>(
    cache: &mut HashMap<(usize, [u8; 32]), V>,
    key: &(usize, [u8; 32]),
    now: Instant,
    until: impl Fn(&V) -> Instant,
) {
    if cache.len() < MAX_VERIFIED || cache.contains_key(key) {
        return;
    }
    cache.retain(|_, v| until(v) > now);
    if cache.len() >= MAX_VERIFIED {
        let first = cache.iter().min_by_key(|(_, v)| until(v));
        if let Some(k) = first.map(|(k, _)| *k) {
            cache.remove(&k);
        }
    }
}

/// The CPU time this thread has used: what a check costs its loop, counted as CPU rather than
/// wall time so that a machine busy with other work does not make checks look dear.
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// The user and password of a `Basic` credential (`Basic base64(user:password)`, the scheme
/// in any case), or `None` when it is not one. The password is cleared from memory when dropped.
fn credentials(value: &[u8]) -> Option<(Vec<u8>, Zeroizing<Vec<u8>>)> {
    if value.len() > MAX_CREDENTIALS || value.len() < 6 {
        return None;
    }
    let (scheme, rest) = value.split_at(5);
    if !scheme.eq_ignore_ascii_case(b"basic") || !rest.starts_with(b" ") {
        return None;
    }
    let token = rest.trim_ascii();
    let decoded = Zeroizing::new(
        base64::engine::general_purpose::STANDARD
            .decode(token)
            .ok()?,
    );
    let colon = decoded.iter().position(|&b| b == b':')?;
    let password = Zeroizing::new(decoded[colon + 1..].to_vec());
    Some((decoded[..colon].to_vec(), password))
}

/// Wrong credentials counted per client address in fixed windows.
#[derive(Debug)]
pub(crate) struct Limiter {
    max: u32,
    window: Duration,
    /// The failures since the window's start.
    counts: HashMap<IpAddr, (u32, Instant)>,
}

impl Limiter {
    fn new(max: u32, window: Duration) -> Limiter {
        Limiter {
            max,
            window,
            counts: HashMap::new(),
        }
    }

    /// Whole seconds (at least 1) until `peer` may be checked again, if it is limited now.
    fn limited(&self, peer: IpAddr, now: Instant) -> Option<u64> {
        let &(count, since) = self.counts.get(&client_of(peer))?;
        let left = self
            .window
            .checked_sub(now.saturating_duration_since(since))?;
        (count >= self.max && !left.is_zero()).then(|| left.as_secs_f64().ceil().max(1.0) as u64)
    }

    /// Begins a hash check for `peer`: refused (the seconds to wait) while it is limited, else
    /// counted as a failure at once, under the same lock as the look. Counted at its start,
    /// not its end, so checks under way on several threads cannot all pass one look before
    /// any is counted: an address gets `max` checks a window, exactly.
    fn begin(&mut self, peer: IpAddr, now: Instant) -> Result<(), u64> {
        if let Some(secs) = self.limited(peer, now) {
            return Err(secs);
        }
        self.failed(peer, now);
        Ok(())
    }

    /// A check begun at `now` found the credentials right (or never ran): its failure is
    /// taken back, unless its window has ended since (a new one counts only its own).
    fn passed(&mut self, peer: IpAddr, now: Instant) {
        if let Some(entry) = self.counts.get_mut(&client_of(peer)) {
            if entry.1 <= now {
                entry.0 = entry.0.saturating_sub(1);
            }
        }
    }

    fn failed(&mut self, peer: IpAddr, now: Instant) {
        let client = client_of(peer);
        if self.counts.len() >= MAX_TRACKED && !self.counts.contains_key(&client) {
            let window = self.window;
            self.counts
                .retain(|_, (_, since)| now.saturating_duration_since(*since) < window);
            if self.counts.len() >= MAX_TRACKED {
                // Every count is live: none is dropped (an attacker cycling through more
                // addresses than this would reset its own counts). The new address goes
                // uncounted; the threads' check budgets bound what it costs.
                return;
            }
        }
        let entry = self.counts.entry(client).or_insert((0, now));
        if now.saturating_duration_since(entry.1) >= self.window {
            *entry = (0, now);
        }
        entry.0 = entry.0.saturating_add(1);
    }
}

/// The address failures are counted by: IPv4 as it is, IPv6 by its /64 (one host is given a
/// whole /64, and would otherwise have 2^64 fresh addresses to guess from).
fn client_of(peer: IpAddr) -> IpAddr {
    match peer {
        IpAddr::V4(_) => peer,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

#[cfg(test)]
mod tests;
