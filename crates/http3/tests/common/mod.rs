pub mod memory;
pub mod udp;
