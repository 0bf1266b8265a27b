//! Connection IDs: random, from the kernel's generator (a peer must not guess another
//! connection's ID: it would let an off-path sender aim packets at it). Those a server issues
//! begin with the index of the thread that holds the connection (two bytes, big-endian), so
//! a thread knows which IDs are its own: only that thread may answer for one with a
//! stateless reset (RFC 9000 21.11).

/// The length of the IDs this side chooses (quiche accepts up to 20).
pub(crate) const LEN: usize = 16;

/// A fresh random connection ID.
pub(crate) fn random() -> [u8; LEN] {
    let mut id = [0u8; LEN];
    fill(&mut id);
    id
}

/// A fresh connection ID for a connection held by thread `thread`.
pub(crate) fn issued(thread: u16) -> [u8; LEN] {
    let mut id = random();
    id[..2].copy_from_slice(&thread.to_be_bytes());
    id
}

/// The thread an ID of ours names (None: not an ID of our length).
pub(crate) fn thread_of(id: &[u8]) -> Option<u16> {
    (id.len() == LEN).then(|| u16::from_be_bytes([id[0], id[1]]))
}

/// Fills `id` with random bytes (a connection ID, a key).
pub(crate) fn fill(id: &mut [u8]) {
    let mut filled = 0;
    while filled < id.len() {
        // SAFETY: the pointer and length describe the unfilled tail of `id`, which the
        // caller lends for the whole call; getrandom writes at most that many bytes there.
        let n = unsafe {
            libc::getrandom(
                id[filled..].as_mut_ptr().cast::<libc::c_void>(),
                id.len() - filled,
                0,
            )
        };
        if n > 0 {
            filled += n as usize;
        } else if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            // getrandom only fails on a kernel without it (before 3.17), which flint does
            // not run on.
            panic!("getrandom: {}", std::io::Error::last_os_error());
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_filled_and_differ() {
        let a = super::random();
        let b = super::random();
        assert_ne!(a, b);
        // 16 random bytes all zero: 2^-128.
        assert_ne!(a, [0; super::LEN]);
    }

    #[test]
    fn an_issued_id_names_its_thread() {
        let id = super::issued(0x0102);
        assert_eq!(super::thread_of(&id), Some(0x0102));
        assert_eq!(super::thread_of(&id[1..]), None);
    }
}
