//! AFL++ target: one client connection's HTTP/2 frames into flint serve's HTTP/2 session.
fn main() {
    afl::fuzz!(|data: &[u8]| flint_fuzz::h2::check(data));
}
