//! A real forward proxy for the egress tests: Debian's `squid`, on a port of its own, configured
//! to allow `CONNECT` from loopback and nothing else, and to log every request. Started and
//! removed by the test, as PostgreSQL and RabbitMQ databases are (`scripts/ensure-test-deps.sh`
//! installs it).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Squid {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl Squid {
    /// `http://127.0.0.1:<port>`, optionally with credentials the proxy ignores (the tests check
    /// that they never appear in a log).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn start() -> Squid {
        Self::start_with(|_| {
            "acl CONNECT method CONNECT
http_access deny !CONNECT
http_access allow localhost
http_access deny all
"
            .to_owned()
        })
    }

    /// The proxy as `deploy/egress/squid.conf` configures it, on a port of its own and with
    /// loopback standing in for the networks webhook-delivery runs in (its `qualifier` source
    /// list); every access rule is the file's own.
    pub fn start_deployed() -> Squid {
        let deployed = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../deploy/egress/squid.conf"
        ))
        .expect("deploy/egress/squid.conf");
        Self::start_with(|_| {
            let mut rules = String::from("connect_timeout 3 seconds\n");
            for line in deployed.lines() {
                let l = line.trim_start();
                if l.starts_with("http_port") || l.starts_with("access_log") {
                    continue;
                }
                if l.starts_with("acl qualifier src ") {
                    rules.push_str(&format!("{line} 127.0.0.0/8\n"));
                } else {
                    rules.push_str(line);
                    rules.push('\n');
                }
            }
            rules
        })
    }

    /// A proxy listening on loopback and logging to a directory of its own, with `rules` (its
    /// access rules) after the settings every test proxy shares.
    fn start_with(rules: impl FnOnce(u16) -> String) -> Squid {
        let port = crate::free_port();
        let dir =
            std::env::temp_dir().join(format!("qualifier-squid-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("squid dir");
        // squid drops to its own user when started as root: it must be able to write here.
        let _ = Command::new("chmod").arg("0777").arg(&dir).status();
        let d = dir.display();
        let conf = format!(
            "http_port 127.0.0.1:{port}
pid_filename {d}/squid.pid
access_log stdio:{d}/access.log squid
cache_log {d}/cache.log
cache_store_log none
cache deny all
coredump_dir {d}
pinger_enable off
shutdown_lifetime 0 seconds
{}",
            rules(port)
        );
        std::fs::write(dir.join("squid.conf"), conf).expect("squid.conf");
        let mut s = Squid {
            port,
            dir,
            child: None,
        };
        s.up();
        s
    }

    /// Starts it again on the same port (after [`Squid::down`]).
    pub fn up(&mut self) {
        assert!(self.child.is_none(), "already running");
        let child = Command::new("squid")
            .arg("-N")
            // Its own service name: squid names its shared memory after it, so that several
            // tests' proxies (and a restart after `down`) never share a segment.
            .arg("-n")
            .arg(self.service())
            .arg("-f")
            .arg(self.dir.join("squid.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("squid (scripts/ensure-test-deps.sh installs it)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "squid did not start: {}",
                self.cache_log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn service(&self) -> String {
        format!("qsquid{}", self.port)
    }

    /// Stops it at once; the port refuses connections until [`Squid::up`].
    pub fn down(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        // A killed squid leaves its shared memory behind; a new one would refuse to start.
        if let Ok(entries) = std::fs::read_dir("/dev/shm") {
            let prefix = format!("{}-", self.service());
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = std::fs::remove_file(self.dir.join("squid.pid"));
    }

    /// The access log's requests, as `(method, target, status)`: `("CONNECT",
    /// "127.0.0.1:8443", "200")`. squid writes an entry when the tunnel closes. The connections
    /// [`Squid::up`] opens to see it listening send nothing and are left out.
    pub fn requests(&self) -> Vec<(String, String, String)> {
        let log = std::fs::read_to_string(self.dir.join("access.log")).unwrap_or_default();
        log.lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                // time elapsed client code/status bytes method url ...
                if f.get(5) == Some(&"-") {
                    return None;
                }
                let status = f.get(3)?.rsplit('/').next()?.to_owned();
                Some((f.get(5)?.to_string(), f.get(6)?.to_string(), status))
            })
            .collect()
    }

    /// The status line's code of a `CONNECT target` through the proxy (0 when it answered
    /// nothing within 20 s).
    pub fn connect_status(&self, target: &str) -> u16 {
        use std::io::{Read, Write};
        let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return 0;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
        let _ = write!(s, "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n");
        let mut head = [0u8; 12];
        match s.read_exact(&mut head) {
            Ok(()) => std::str::from_utf8(&head[9..12])
                .ok()
                .and_then(|c| c.parse().ok())
                .unwrap_or(0),
            Err(_) => 0,
        }
    }

    /// Everything squid logged, for a failing test's message.
    pub fn all_logs(&self) -> String {
        let access = std::fs::read_to_string(self.dir.join("access.log")).unwrap_or_default();
        format!("{access}{}", self.cache_log())
    }

    fn cache_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("cache.log")).unwrap_or_default()
    }
}

impl Drop for Squid {
    fn drop(&mut self) {
        self.down();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
