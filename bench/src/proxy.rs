//! The TCP proxy both counting hooks are built on (`httpcount`, `pgcount`): it accepts
//! on a port, connects each client to the upstream, and hands the pair to the hook's
//! `pipe`, which forwards the bytes and logs what it reads into the hook's log.

use std::future::Future;

use tokio::net::TcpStream;

pub struct Proxy<L> {
    pub port: u16,
    pub log: L,
    task: tokio::task::JoinHandle<()>,
}

impl<L> Drop for Proxy<L> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl<L: Clone + Send + 'static> Proxy<L> {
    /// Listens on `port` and forwards every connection to `upstream` (`host:port`)
    /// through `pipe`, with a clone of `log`.
    pub async fn listen<F, Fut>(
        port: u16,
        upstream: String,
        log: L,
        pipe: F,
    ) -> anyhow::Result<Self>
    where
        F: Fn(TcpStream, TcpStream, L) -> Fut + Send + Sync + Copy + 'static,
        Fut: Future<Output = std::io::Result<()>> + Send + 'static,
    {
        let listener = crate::rapi::bind(port).await?;
        let task = {
            let log = log.clone();
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    let log = log.clone();
                    let upstream = upstream.clone();
                    tokio::spawn(async move {
                        if let Ok(server) = TcpStream::connect(&upstream).await {
                            let _ = pipe(client, server, log).await;
                        }
                    });
                }
            })
        };
        Ok(Proxy { port, log, task })
    }
}
