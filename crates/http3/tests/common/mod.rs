pub mod caddy;
pub mod memory;
pub mod udp;
