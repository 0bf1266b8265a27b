//! A claimed request's start: its launch made (a program's environment, a FastCGI
//! application's records, a proxied request's head), then handed to the spawner thread, or
//! sent on a pooled connection of its application (a new one when none is idle, again on a new
//! one when a reused one failed first). Apart from `gateway.rs` because it is the way in of a
//! gateway's request, as `retiring.rs` is the way out.

use std::time::Instant;

use super::{
    asked, cgi, fcgi, program, proxy, spawner, upstream, Gateways, Launch, Program, Route, Starting,
};

impl Gateways {
    /// The launch for a request `route` claims (`Route::Cgi` or `Route::Proxy`).
    pub fn launch<'a>(
        &mut self,
        route: &Route,
        req: &wire::Request<'_>,
        asked: asked::Asked<'a, impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone>,
        peer: std::net::SocketAddr,
    ) -> Launch {
        let request = super::label::RequestLabel::new(asked.method, req.target, asked.protocol);
        let mut launch = self.launch_for(route, req, asked, peer);
        launch.request = request;
        launch
    }

    fn launch_for<'a>(
        &mut self,
        route: &Route,
        req: &wire::Request<'_>,
        asked: asked::Asked<'a, impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone>,
        peer: std::net::SocketAddr,
    ) -> Launch {
        match route {
            Route::Proxy(mount) => {
                let body = asked.content_length.unwrap_or(0);
                let buffers = self.fcgi_pool.buffers();
                let hop = self.proxies.hop(*mount, peer.ip(), self.https);
                let fwd = proxy::request::forward(*mount, req, asked, &hop, buffers);
                Launch {
                    program: Default::default(),
                    dir: Default::default(),
                    env: Vec::new(),
                    body,
                    app: None,
                    proxy: Some(fwd),
                    fastcgi: None,
                    request: Default::default(),
                }
            }
            Route::Cgi(script) => {
                let mut scratch = std::mem::take(&mut self.scratch);
                let launch = match script.app {
                    Some(app) => self.launch_fastcgi(script, app, req, asked, peer, &mut scratch),
                    None => cgi::launch(script, req, asked, peer, self, &mut scratch),
                };
                self.scratch = scratch;
                launch
            }
            Route::Refused(_) => unreachable!("a refused route has no launch"),
        }
    }

    /// The launch of a request for FastCGI application `app`: its BEGIN_REQUEST and PARAMS
    /// encoded into a recycled buffer as the meta-variables come, with no environment made.
    fn launch_fastcgi<'a>(
        &mut self,
        script: &cgi::Script,
        app: usize,
        req: &wire::Request<'_>,
        asked: asked::Asked<'a, impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone>,
        peer: std::net::SocketAddr,
        scratch: &mut cgi::Scratch,
    ) -> Launch {
        // A chunked body is read whole before the request has a program slot (it may never
        // get one): until it starts, the request holds its records alone, not the pool's
        // buffers (`start_fastcgi` takes them).
        let buffers = match req.chunked {
            true => upstream::Buffers::records_only(),
            false => self.fcgi_pool.buffers(),
        };
        let keep_conn = self.fcgi_pool.keeps(app);
        let mut params = fcgi::Params::new(buffers, keep_conn, asked.method);
        let mut set = |k: &[u8], v: &[u8]| params.param(k, v);
        cgi::meta_variables(script, req, &asked, peer, self, scratch, &mut set);
        Launch {
            program: Default::default(),
            dir: Default::default(),
            env: Vec::new(),
            body: asked.content_length.unwrap_or(0),
            app: Some(app),
            proxy: None,
            fastcgi: Some(params),
            request: Default::default(),
        }
    }

    /// Starts `launch` (its records made by [`Gateways::launch`]) on application `app`: an
    /// idle connection of the pool if one is open, else a new one (not waited for). An error
    /// means nothing reached the application. Returns whether the connection was reused.
    pub fn start_fastcgi(
        &mut self,
        launch: Launch,
        app: usize,
        token: usize,
        deadline: Instant,
    ) -> std::io::Result<(fcgi::Exchange, bool)> {
        let Some(mut params) = launch.fastcgi else {
            return Err(std::io::Error::other(
                "a FastCGI request without its records",
            ));
        };
        if params.buffers.is_records_only() {
            // Copied into the pool's buffer, which stays the pool's (its capacity kept).
            let mut pooled = self.fcgi_pool.buffers();
            pooled.out.clear();
            pooled.out.extend_from_slice(&params.buffers.out);
            params.buffers = pooled;
        }
        let a = &self.apps[app];
        let taken = match self.fcgi_pool.take(app, token) {
            Some((s, slot)) => Ok((s, slot, true)),
            None => upstream::Stream::connect(&a.addr)
                .map(|s| (s, self.fcgi_pool.open_slot(token), false)),
        };
        let (stream, slot, reused) = match taken {
            Ok(t) => t,
            Err(e) => {
                self.fcgi_pool.recycle(params.buffers);
                return Err(e);
            }
        };
        let up = fcgi::Upstream {
            stream,
            slot,
            app,
            reused,
            keep_conn: self.fcgi_pool.keeps(app),
            name: a.name.clone(),
            buffers: params.buffers,
        };
        let max_output = self.limits.max_output;
        let (encoder, idempotent) = (params.encoder, params.idempotent);
        let registry = &self.registry;
        match fcgi::Exchange::start(
            encoder,
            idempotent,
            launch.body,
            up,
            registry,
            deadline,
            max_output,
        ) {
            Ok(x) => Ok((x, reused)),
            Err((e, buffers)) => {
                self.fcgi_pool.close_slot(slot);
                self.fcgi_pool.recycle(buffers);
                Err(e)
            }
        }
    }

    /// Sends a request that failed on a pooled connection before reaching the application
    /// again, on a new connection (`Exchange::may_retry`).
    pub fn retry_fastcgi(&mut self, x: &mut fcgi::Exchange) -> std::io::Result<()> {
        let stream = upstream::Stream::connect(&self.apps[x.app].addr)?;
        x.slot = self.fcgi_pool.renew_slot(x.slot);
        x.retry(stream)
    }

    /// Hands `launch` (a program's) to the spawner thread for connection `token`: what the
    /// connection holds until it runs. An error means nothing starts (its slot is the caller's
    /// to give back); the program's path comes back with it, for the log.
    pub fn start_program(
        &mut self,
        launch: Launch,
        token: usize,
        deadline: Instant,
    ) -> Result<Starting, (std::io::Error, std::path::PathBuf)> {
        let name = launch.program.display().to_string().into();
        let job = spawner::Job {
            ticket: 0,
            token,
            stdin: launch.body > 0,
            program: launch.program,
            dir: launch.dir,
            env: launch.env,
        };
        let Some(spawner) = self.spawner.as_mut() else {
            let e = std::io::Error::other("no programs are configured");
            return Err((e, job.program));
        };
        let ticket = spawner.send(job).map_err(|(e, job)| (e, job.program))?;
        Ok(Starting {
            ticket,
            deadline,
            name,
        })
    }

    /// A program the spawner thread is done with, if one is there (the loop's waker said so).
    pub fn take_spawned(&mut self) -> Option<spawner::Spawned> {
        self.spawner.as_mut()?.take()
    }

    /// A started program (`name`: its path, from its [`Starting`]), its pipes registered for
    /// connection `token`; an error if they could not be (the program is then retired, killed).
    pub fn program_ready(
        &mut self,
        started: spawner::Started,
        name: Box<str>,
        token: usize,
        deadline: Instant,
    ) -> std::io::Result<Program> {
        match program::registered(started, name, token, &self.registry, deadline) {
            Ok(p) => Ok(p),
            Err(p) => {
                self.retire(*p, true);
                Err(std::io::Error::other("cannot register its pipes"))
            }
        }
    }
}
