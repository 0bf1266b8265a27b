//! AFL++ target: one server connection's bytes into flint bench's response reading.
fn main() {
    afl::fuzz!(|data: &[u8]| flint_fuzz::response::check(data));
}
