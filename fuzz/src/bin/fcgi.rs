//! AFL++ target: one FastCGI application's records into flint serve's record reader.
fn main() {
    afl::fuzz!(|data: &[u8]| flint_fuzz::fcgi::check(data));
}
