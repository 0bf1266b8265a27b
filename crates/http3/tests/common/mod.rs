pub mod caddy;
pub mod memory;
pub mod raw;
pub mod udp;
