//! A counting hook on the Postgres wire: a TCP proxy in front of the database that
//! reads the client's messages and logs every statement it executes (the SQL of a
//! simple `Query`, or of the prepared statement an extended-protocol `Execute` runs).
//! Used instead of `pg_stat_statements`, which the shared server does not preload.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>, Arc<AtomicUsize>);

impl Log {
    /// The statements executed since the last take.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }

    /// The round trips since the last take: each `Sync` (the end of an extended-protocol
    /// exchange, however many statements it carried) and each simple `Query`.
    pub fn take_round_trips(&self) -> usize {
        self.1.swap(0, Ordering::SeqCst)
    }
}

pub type Proxy = crate::proxy::Proxy<Log>;

pub async fn start(port: u16, upstream: String) -> anyhow::Result<Proxy> {
    crate::proxy::Proxy::listen(port, upstream, Log::default(), pipe).await
}

async fn pipe(client: TcpStream, server: TcpStream, log: Log) -> std::io::Result<()> {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let down =
        tokio::spawn(async move { tokio::io::copy(&mut server_read, &mut client_write).await });
    let mut statements: HashMap<String, String> = HashMap::new();
    let mut portals: HashMap<String, String> = HashMap::new();
    // Startup phase: untyped messages (SSLRequest, StartupMessage) until the startup
    // message proper (protocol 3.0).
    loop {
        let len = client_read.read_i32().await?;
        let mut rest = vec![0; usize::try_from(len).unwrap_or(4).saturating_sub(4)];
        client_read.read_exact(&mut rest).await?;
        server_write.write_all(&len.to_be_bytes()).await?;
        server_write.write_all(&rest).await?;
        if rest.len() >= 4 && rest[..4] == 196_608i32.to_be_bytes() {
            break;
        }
    }
    loop {
        let kind = client_read.read_u8().await?;
        let len = client_read.read_i32().await?;
        let mut body = vec![0; usize::try_from(len).unwrap_or(4).saturating_sub(4)];
        client_read.read_exact(&mut body).await?;
        server_write.write_u8(kind).await?;
        server_write.write_all(&len.to_be_bytes()).await?;
        server_write.write_all(&body).await?;
        let mut fields = body
            .split(|b| *b == 0)
            .map(|s| String::from_utf8_lossy(s).into_owned());
        match kind {
            b'Q' => {
                log.1.fetch_add(1, Ordering::SeqCst);
                log.0
                    .lock()
                    .unwrap()
                    .push(fields.next().unwrap_or_default());
            }
            b'S' => {
                log.1.fetch_add(1, Ordering::SeqCst);
            }
            b'P' => {
                let name = fields.next().unwrap_or_default();
                let sql = fields.next().unwrap_or_default();
                statements.insert(name, sql);
            }
            b'B' => {
                let portal = fields.next().unwrap_or_default();
                let statement = fields.next().unwrap_or_default();
                let sql = statements.get(&statement).cloned().unwrap_or_default();
                portals.insert(portal, sql);
            }
            b'E' => {
                let portal = fields.next().unwrap_or_default();
                let sql = portals.get(&portal).cloned().unwrap_or_default();
                log.0.lock().unwrap().push(sql);
            }
            b'X' => break,
            _ => {}
        }
    }
    down.abort();
    Ok(())
}
