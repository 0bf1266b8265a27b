//! The configs of the dynamic experiment's servers beyond flint serve and nginx: the lab
//! peers' config for each (the same static files, the same single process or thread as in
//! every other experiment) with the application's gateways mounted at the deployments'
//! prefixes (`lab_app::deploy`); Apache's pool sized for the experiment's clients. Each writes
//! its files into the stack's directory and returns the server's arguments.

use super::clients::DYNAMIC_CLIENTS;
use lab_app::deploy::{self, Gateways};
use lab_peers::PeerKind;
use std::ffi::OsString;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// The lab peers' parameters for a dynamic stack's server on `port`: plain HTTP/1.1, sized for
/// the experiment's clients.
fn params<'a>(dir: &'a Path, root: &'a Path, port: u16) -> lab_peers::ConfigParams<'a> {
    lab_peers::ConfigParams {
        dir,
        root,
        host: Ipv4Addr::LOCALHOST.into(),
        port,
        digest: false,
        max_clients: DYNAMIC_CLIENTS,
        tls: None,
        http2: false,
    }
}

fn write(dir: &Path, name: &str, text: &str) -> Result<PathBuf, String> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|e| format!("{name}: {e}"))?;
    Ok(path)
}

/// lighttpd (`-D -f CONF`): one process; mod_fastcgi, mod_cgi and mod_proxy added.
pub fn lighttpd_args(dir: &Path, port: u16, g: &Gateways) -> Result<Vec<OsString>, String> {
    let mut text = lab_peers::lighttpd_config(&params(dir, g.root, port));
    text.push_str(&deploy::lighttpd_gateways(g));
    let conf = write(dir, "lighttpd.conf", &text)?;
    Ok(vec!["-D".into(), "-f".into(), conf.into()])
}

/// h2o (`-c CONF`): one thread; its FastCGI and proxy paths before the static files'.
pub fn h2o_args(dir: &Path, port: u16, g: &Gateways) -> Result<Vec<OsString>, String> {
    let text = deploy::h2o_config(&lab_peers::h2o_config(&params(dir, g.root, port)), g)?;
    let conf = write(dir, "h2o.conf", &text)?;
    Ok(vec!["-c".into(), conf.into()])
}

/// Caddy (`caddy run --config CONF --adapter caddyfile`, with `lab_peers::caddy_env`): its
/// gateways' `handle` blocks before the site's `file_server`.
pub fn caddy_args(dir: &Path, port: u16, g: &Gateways) -> Result<Vec<OsString>, String> {
    let site = lab_peers::caddy_config(&params(dir, g.root, port));
    let at = (site.find(lab_peers::CADDY_FILE_SERVER)).ok_or("the Caddyfile has no file_server")?;
    let text = format!("{}{}{}", &site[..at], deploy::caddy_handles(g), &site[at..]);
    let conf = write(dir, "Caddyfile", &text)?;
    Ok(vec![
        "run".into(),
        "--config".into(),
        conf.into(),
        "--adapter".into(),
        "caddyfile".into(),
    ])
}

/// The clients Apache's pool is sized for: the experiment's, as fcgiwrap's children are.
pub const APACHE_CLIENTS: usize = DYNAMIC_CLIENTS;

/// The MPM of an Apache `kind`; `None`: not Apache.
pub fn apache_mpm(kind: PeerKind) -> Option<lab_peers::Mpm> {
    match kind {
        PeerKind::ApacheEvent => Some(lab_peers::Mpm::Event),
        PeerKind::ApachePrefork => Some(lab_peers::Mpm::Prefork),
        _ => None,
    }
}

/// Writes Apache's config (the lab peers' config for `mpm`, its gateways added) into `dir` and
/// returns its arguments.
pub fn apache_args(
    dir: &Path,
    root: &Path,
    port: u16,
    user: Option<&str>,
    mpm: lab_peers::Mpm,
    gateways: &deploy::Apache,
) -> Result<Vec<OsString>, String> {
    let params = lab_peers::ConfigParams {
        dir,
        root,
        host: Ipv4Addr::LOCALHOST.into(),
        port,
        digest: false,
        max_clients: APACHE_CLIENTS,
        tls: None,
        http2: false,
    };
    let mut text = lab_peers::apache_config(&params, mpm, user);
    text.push_str(&deploy::apache_gateways(gateways));
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{name}: {e}"))?;
        Ok::<_, String>(path)
    };
    write("mime.types", lab_peers::apache_mime_types())?;
    let conf = write("httpd.conf", text)?;
    Ok(vec![
        "-D".into(),
        "FOREGROUND".into(),
        "-f".into(),
        conf.into(),
    ])
}
