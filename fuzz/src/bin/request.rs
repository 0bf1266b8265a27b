//! AFL++ target: one client connection's bytes into flint serve's request reading.
fn main() {
    afl::fuzz!(|data: &[u8]| flint_fuzz::request::check(data));
}
