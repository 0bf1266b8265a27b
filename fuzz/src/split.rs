//! Where a simulated socket cuts an input into reads.
//!
//! A parser that gives a different answer when a message arrives in pieces is a parser that fails
//! under real traffic (small MTUs, slow clients, pipelined batches cut anywhere). The cut points
//! are derived from the input's own bytes, so a crash reproduces from the saved file alone, and
//! every mutation the fuzzer makes also moves the cuts.

/// Inputs up to this long are cut after every byte: every prefix is seen.
const EVERY_BYTE: usize = 192;

/// The end offsets of the reads an input arrives in: increasing, the last one `data.len()`.
/// Empty for empty input.
pub fn cuts(data: &[u8]) -> Vec<usize> {
    let n = data.len();
    if n <= EVERY_BYTE {
        return (1..=n).collect();
    }
    let mut rng = XorShift(fnv1a(data) | 1);
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < n {
        // Mostly small reads (1 to 16 bytes: a byte at a time across delimiters), sometimes a
        // few hundred, now and then a few KiB (all at once is the other reading).
        let step = match rng.next() % 16 {
            0..=9 => 1 + (rng.next() % 16) as usize,
            10..=14 => 1 + (rng.next() % 512) as usize,
            _ => 1 + (rng.next() % 4096) as usize,
        };
        pos = (pos + step).min(n);
        out.push(pos);
    }
    out
}

/// FNV-1a, 64 bit: a stable hash of the input (no per-process random state).
fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Marsaglia's xorshift64: enough to spread cut points, and deterministic.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_inputs_are_cut_after_every_byte() {
        assert_eq!(cuts(b""), Vec::<usize>::new());
        assert_eq!(cuts(b"abc"), vec![1, 2, 3]);
    }

    #[test]
    fn long_inputs_are_cut_increasingly_and_deterministically() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 31 % 251) as u8).collect();
        let a = cuts(&data);
        assert_eq!(a, cuts(&data), "same input, same cuts");
        assert_eq!(a.last(), Some(&data.len()));
        assert!(a.windows(2).all(|w| w[0] < w[1]), "{a:?}");
        assert!(a.len() > 4, "a long input arrives in several reads: {a:?}");
        let mut other = data.clone();
        other[0] ^= 1;
        assert_ne!(a, cuts(&other), "a one-bit change moves the cuts");
    }
}
