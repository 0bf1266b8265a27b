//! What a proxy mount says of the client to its upstream: which forwarding fields it writes
//! (`forwarding`), and the client addresses whose own forwarding fields it keeps (`trusted`:
//! other proxies in front of it). A field a client wrote is never trusted otherwise.

use std::net::IpAddr;
use std::str::FromStr;

/// The forwarding fields a proxy mount writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Forwarding {
    /// `X-Forwarded-For`, `X-Forwarded-Proto`, `X-Forwarded-Host` (what most applications read).
    #[default]
    XForwarded,
    /// `Forwarded` (RFC 7239): `for=...;proto=...;host=...`.
    Forwarded,
    /// Both kinds.
    Both,
    /// None: the upstream learns nothing of the client (a trusted client's fields dropped too).
    None,
}

impl Forwarding {
    /// Whether this setting writes the forwarding field `name` (lowercase): a trusted client's
    /// field of that name is kept and appended to only then.
    pub fn writes(self, name: &[u8]) -> bool {
        if name == b"forwarded" {
            self.forwarded()
        } else {
            self.x_forwarded()
        }
    }

    /// Whether the `X-Forwarded-*` fields are written (`x-forwarded` or `both`).
    pub fn x_forwarded(self) -> bool {
        matches!(self, Forwarding::XForwarded | Forwarding::Both)
    }

    /// Whether the `Forwarded` field is written (`forwarded` or `both`).
    pub fn forwarded(self) -> bool {
        matches!(self, Forwarding::Forwarded | Forwarding::Both)
    }
}

/// A block of addresses: `10.0.0.0/8`, `fd00::/8`, or one address (`127.0.0.1`, `::1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    /// The block's first address (the bits past `bits` cleared).
    addr: IpAddr,
    bits: u8,
}

impl Cidr {
    /// Whether `ip` is in the block. An IPv4 client on an IPv6 socket (`::ffff:a.b.c.d`) is
    /// matched as its IPv4 address, by IPv4 blocks only (a block written in the mapped form
    /// is an IPv4 block from its parsing on): an IPv6 block never holds an IPv4 client.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.bits)).unwrap_or(0);
                u32::from(ip) & mask == u32::from(net)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.bits))
                    .unwrap_or(0);
                u128::from(ip) & mask == u128::from(net)
            }
            _ => false,
        }
    }
}

impl FromStr for Cidr {
    type Err = String;

    /// `ADDR` or `ADDR/BITS`; the bits past the length may be set (`10.1.2.3/8` is `10.0.0.0/8`).
    fn from_str(text: &str) -> Result<Cidr, String> {
        let bad = || format!("`{text}`: expected an address or ADDR/BITS (`10.0.0.0/8`, `::1`)");
        let (addr, bits) = match text.split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (text, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            Some(b) => b.parse::<u8>().ok().filter(|&b| b <= max).ok_or_else(bad)?,
            None => max,
        };
        // An IPv4 block in IPv6's mapped form (`::ffff:10.0.0.0/104`) is kept as the IPv4
        // block it maps (`10.0.0.0/8`), so that it matches IPv4 clients and nothing else. A
        // shorter length would reach past `::ffff:0:0/96` (`::ffff:10.0.0.0/8` masks to
        // `::/8`, which holds every mapped address): refused, not widened.
        let (addr, bits) = match addr {
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) if bits >= 96 => (IpAddr::V4(v4), bits - 96),
                Some(_) => {
                    return Err(format!(
                        "`{text}`: an IPv4-mapped block needs a length of 96 or more \
                         (use 10.0.0.0/8 or ::ffff:10.0.0.0/104)"
                    ))
                }
                None => (addr, bits),
            },
            IpAddr::V4(_) => (addr, bits),
        };
        let addr = match addr {
            IpAddr::V4(a) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
                IpAddr::V4((u32::from(a) & mask).into())
            }
            IpAddr::V6(a) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
                IpAddr::V6((u128::from(a) & mask).into())
            }
        };
        Ok(Cidr { addr, bits })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_block_holds_the_addresses_under_its_length() {
        let net: Cidr = "10.1.2.3/8".parse().unwrap();
        assert_eq!(net, "10.0.0.0/8".parse().unwrap());
        assert!(net.contains(ip("10.255.0.1")));
        assert!(!net.contains(ip("11.0.0.1")));
        assert!(
            net.contains(ip("::ffff:10.9.9.9")),
            "IPv4 on an IPv6 socket"
        );
        assert!(!net.contains(ip("::1")));
        let one: Cidr = "127.0.0.1".parse().unwrap();
        assert!(one.contains(ip("127.0.0.1")) && !one.contains(ip("127.0.0.2")));
        let all: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("203.0.113.9")));
        let v6: Cidr = "fd00::/8".parse().unwrap();
        assert!(v6.contains(ip("fd12::1")) && !v6.contains(ip("fe80::1")));
        assert!(!v6.contains(ip("10.0.0.1")));
        // A block written in the IPv4-mapped form holds the IPv4 clients it maps, whichever
        // socket they came on.
        let mapped: Cidr = "::ffff:10.0.0.0/104".parse().unwrap();
        assert!(mapped.contains(ip("10.1.2.3")));
        assert!(mapped.contains(ip("::ffff:10.1.2.3")));
        assert!(!mapped.contains(ip("11.0.0.1")) && !mapped.contains(ip("::1")));
        let one: Cidr = "::ffff:192.0.2.7".parse().unwrap();
        assert!(one.contains(ip("192.0.2.7")) && !one.contains(ip("192.0.2.8")));
        assert_eq!(
            mapped,
            "10.0.0.0/8".parse().unwrap(),
            "kept as its IPv4 block"
        );
        // An IPv6 block holds IPv6 clients only: `::/0` trusts no IPv4 client.
        let every: Cidr = "::/0".parse().unwrap();
        assert!(!every.contains(ip("203.0.113.9")) && every.contains(ip("fe80::1")));
        assert!(!every.contains(ip("::ffff:203.0.113.9")));
        // A mapped address with a length under 96 would hold every IPv4 client: refused.
        let e = "::ffff:10.0.0.0/8".parse::<Cidr>().unwrap_err();
        assert!(e.contains("::ffff:10.0.0.0/104"), "{e}");
        assert!("::ffff:0:0/95".parse::<Cidr>().is_err());
        let all_v4: Cidr = "::ffff:0:0/96".parse().unwrap();
        assert_eq!(all_v4, "0.0.0.0/0".parse().unwrap());
        let loopback: Cidr = "::1".parse().unwrap();
        assert!(loopback.contains(ip("::1")) && !loopback.contains(ip("::2")));
        for bad in [
            "",
            "10.0.0.0/33",
            "::/129",
            "10.0.0/8",
            "localhost",
            "10.0.0.0/-1",
        ] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_forwarding_kinds_are_spelt_as_in_the_config() {
        #[derive(serde::Deserialize)]
        struct T {
            f: Forwarding,
        }
        let kinds = [
            ("x-forwarded", Forwarding::XForwarded),
            ("forwarded", Forwarding::Forwarded),
            ("both", Forwarding::Both),
            ("none", Forwarding::None),
        ];
        for (text, kind) in kinds {
            let t: T = toml::from_str(&format!("f = {text:?}")).unwrap();
            assert_eq!(t.f, kind);
        }
        assert!(toml::from_str::<T>("f = \"x-forwarded-for\"").is_err());
        assert!(Forwarding::Both.forwarded() && Forwarding::Both.x_forwarded());
        assert!(!Forwarding::None.forwarded() && !Forwarding::None.x_forwarded());
    }
}
