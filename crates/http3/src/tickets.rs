//! The server's session ticket keys, rotated: a ticket is sealed with the key of the period
//! it is issued in and opened with that key or the one before, so a ticket lives at most two
//! periods. (A recorded 0-RTT flight replays for about a minute only, whatever the period:
//! BoringSSL refuses early data whose stated ticket age is more than 60 s off.) The default
//! period is rustls's `Ticketer`'s, which flint serve's TLS over TCP takes too: 6 hours (a
//! ticket lives 6 to 12 hours). nginx's own keys, drawn at start, never rotate: a long-running nginx
//! keeps one unless its `ssl_session_ticket_key` files are changed and it is reloaded.
//!
//! Every thread's TLS context must open a ticket any thread issued (a client resuming lands on
//! whichever thread its port hashes to), so the keys are not drawn per context: the key of
//! period `n` is derived from the process's secret (`token.rs`, drawn at start) and `n`, and
//! `n` counts periods since that secret was drawn (on the server's `TicketClock`, which tests
//! alone move on). Nothing is stored or swapped: each thread computes the same keys when it
//! needs them (a few HMACs a handshake), so no lock is shared.
//! A restarted server has a new secret and opens no old ticket (a full handshake, no error).
//!
//! BoringSSL's ticket format is kept (its `SSL_CTX_set_tlsext_ticket_key_cb`): a 16-byte key
//! name, AES-128-CBC under the period's key, HMAC-SHA-256 over it. The name says which
//! period's key sealed the ticket.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use boring::hash::MessageDigest;
use boring::ssl::{SslContextBuilder, TicketKeyCallbackResult};
use boring::symm::Cipher;

/// rustls's `Ticketer` period (flint serve's TLS over TCP): 6 hours.
pub const DEFAULT_TICKET_KEY_PERIOD: Duration = Duration::from_secs(6 * 60 * 60);

/// The clock a server's ticket key periods count on: the time since the process drew its
/// secret, plus an offset only tests move (`TicketClock::shift`, the `test-hooks` feature).
/// The threads of one server share one ([`crate::ServerConfig::ticket_clock`]), so a test that
/// moves its server's periods on moves no other server's in the same process.
#[derive(Clone, Debug, Default)]
pub struct TicketClock(Arc<AtomicU64>);

impl TicketClock {
    /// A clock at the process's time (no offset).
    pub fn new() -> TicketClock {
        TicketClock::default()
    }

    /// Which period is current on this clock for keys rotating every `period`: 0 for the first
    /// `period` after the process drew its secret, then 1, and so on. A ticket issued in
    /// period `n` resumes in `n` and `n + 1`, never after.
    pub fn epoch(&self, period: Duration) -> u64 {
        epoch_at(self.0.load(Ordering::Relaxed), period)
    }

    /// Tests: moves this clock on by `by` (a test of rotation counts periods without waiting
    /// for them); the servers counting on it see the periods move, no other does.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn shift(&self, by: Duration) {
        let ms = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        self.0.fetch_add(ms, Ordering::Relaxed);
    }
}

/// The period current `offset_ms` past the time since the process drew its secret.
fn epoch_at(offset_ms: u64, period: Duration) -> u64 {
    let ms = u64::try_from(period.as_millis()).unwrap_or(u64::MAX).max(1);
    let elapsed = u64::try_from(crate::token::since_start().as_millis()).unwrap_or(u64::MAX);
    elapsed.saturating_add(offset_ms) / ms
}

/// The rotation period a server's TLS context uses, in ms, and the clock it counts on: both
/// set after the context is built ([`crate::ServerConfig::ticket_key_period`],
/// [`crate::ServerConfig::ticket_clock`]), read at each ticket without a lock.
#[derive(Clone)]
pub(crate) struct Period(Arc<PeriodState>);

struct PeriodState {
    ms: AtomicU64,
    /// Unset: the process's time, no offset.
    clock: OnceLock<TicketClock>,
}

impl Period {
    fn new() -> Period {
        Period(Arc::new(PeriodState {
            ms: AtomicU64::new(0),
            clock: OnceLock::new(),
        }))
    }

    pub fn set(&self, period: Duration) {
        let ms = u64::try_from(period.as_millis()).unwrap_or(u64::MAX).max(1);
        self.0.ms.store(ms, Ordering::Relaxed);
    }

    /// Counts on `clock` from now on; the first clock given stays.
    pub fn count_on(&self, clock: &TicketClock) {
        let _ = self.0.clock.set(clock.clone());
    }

    fn get(&self) -> Duration {
        Duration::from_millis(self.0.ms.load(Ordering::Relaxed))
    }

    /// The period current on its clock.
    fn epoch(&self) -> u64 {
        match self.0.clock.get() {
            Some(clock) => clock.epoch(self.get()),
            None => epoch_at(0, self.get()),
        }
    }
}

/// Seals and opens `builder`'s session tickets with the rotating keys; the period starts at
/// [`DEFAULT_TICKET_KEY_PERIOD`].
pub(crate) fn install(builder: &mut SslContextBuilder) -> Period {
    let period = Period::new();
    period.set(DEFAULT_TICKET_KEY_PERIOD);
    let read = period.clone();
    let callback = move |_: &boring::ssl::SslRef,
                         name: &mut [u8; 16],
                         iv: &mut [u8; 16],
                         cipher: &mut boring::symm::CipherCtxRef,
                         hmac: &mut boring::hmac::HmacCtxRef,
                         encrypt: bool| {
        let now = read.epoch();
        let period_ms = u64::try_from(read.get().as_millis()).unwrap_or(u64::MAX);
        let key_of = |epoch| crate::token::ticket_key(period_ms, epoch);
        let (key, result) = if encrypt {
            let key = key_of(now);
            *name = key.name;
            if boring::rand::rand_bytes(iv).is_err() {
                return TicketKeyCallbackResult::Error;
            }
            (key, TicketKeyCallbackResult::Success)
        } else {
            let current = key_of(now);
            if *name == current.name {
                (current, TicketKeyCallbackResult::Success)
            } else {
                match now.checked_sub(1).map(key_of) {
                    // Opened, and a ticket under the current key issued in its place.
                    Some(previous) if *name == previous.name => {
                        (previous, TicketKeyCallbackResult::DecryptSuccessRenew)
                    }
                    // Older, or not ours: a full handshake.
                    _ => return TicketKeyCallbackResult::Noop,
                }
            }
        };
        let aes = Cipher::aes_128_cbc();
        let ready = match encrypt {
            true => cipher.init_encrypt(&aes, &key.aes, iv),
            false => cipher.init_decrypt(&aes, &key.aes, iv),
        };
        match ready.and_then(|()| hmac.init(&key.hmac, &MessageDigest::sha256())) {
            Ok(()) => result,
            Err(_) => TicketKeyCallbackResult::Error,
        }
    };
    // SAFETY: BoringSSL asks the callback to set the key name and IV (sealing) and to set up
    // the cipher and HMAC contexts for the ticket (both ways). Every `Success` and
    // `DecryptSuccessRenew` above comes after all of them are set (the name and IV written,
    // `init_encrypt`/`init_decrypt` with a 16-byte key for AES-128-CBC and its 16-byte IV,
    // `HMAC_Init_ex` with SHA-256); a failure of any returns `Error`, and an unknown name
    // `Noop` (BoringSSL then reads neither context). The context is a plain X.509 one (no
    // raw public keys), which the call requires. Tested through a server: resumption on
    // every thread and by period (flint serve's `tests/it/h3_resume.rs`,
    // `h3_ticket_rotation.rs`), 0-RTT (`h3_early_data.rs`); the keys below.
    unsafe { builder.set_ticket_key_callback(callback) };
    period
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_period_has_its_own_key_the_same_each_time_it_is_asked_for() {
        let key = crate::token::ticket_key;
        let (a, b) = (key(1_000, 7), key(1_000, 7));
        assert_eq!((a.name, a.aes, a.hmac), (b.name, b.aes, b.hmac));
        // Another period, or the same number of periods of another length: another key.
        for c in [key(1_000, 8), key(2_000, 7)] {
            assert_ne!(a.name, c.name);
            assert_ne!(a.aes, c.aes);
            assert_ne!(a.hmac, c.hmac);
        }
        // Periods count from the secret's drawing: a day-long period is still the first.
        let day = Duration::from_secs(86_400);
        assert_eq!(TicketClock::new().epoch(day), 0);
        let period = Period::new();
        period.set(Duration::ZERO);
        assert_eq!(
            period.get(),
            Duration::from_millis(1),
            "never a period of 0"
        );
    }

    #[test]
    fn a_shifted_clock_moves_its_own_periods_and_no_other_clocks() {
        let day = Duration::from_secs(86_400);
        let (moved, still) = (TicketClock::new(), TicketClock::new());
        let period = Period::new();
        period.set(day);
        period.count_on(&moved);
        // A second clock given later does not replace the first.
        period.count_on(&still);
        moved.shift(2 * day);
        assert_eq!((moved.epoch(day), still.epoch(day)), (2, 0));
        assert_eq!(
            period.epoch(),
            2,
            "the period counts on the clock it was given"
        );
        // A clone is the same clock.
        moved.clone().shift(day);
        assert_eq!(moved.epoch(day), 3);
        assert_eq!(TicketClock::new().epoch(day), 0);
    }
}
