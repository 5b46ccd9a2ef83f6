//! A connection's writes under a deadline: a client that stops reading (its socket's buffers full,
//! every write waiting) for longer than the limit has its connection ended with an error. Hyper
//! then drops the response, which cancels its job and frees its place in the queue. Reads pass
//! through untouched (the listener bounds them with its header and body timeouts).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// `S` whose writes fail once one has waited `limit` without the client taking a byte.
pub(crate) struct WriteDeadline<S> {
    inner: S,
    limit: Duration,
    /// Running while a write waits: started by the first write that could not go through, reset
    /// by any that does.
    waiting: Option<Pin<Box<Sleep>>>,
}

impl<S> WriteDeadline<S> {
    pub(crate) fn new(inner: S, limit: Duration) -> Self {
        WriteDeadline { inner, limit, waiting: None }
    }

    /// What a write (or flush, or shutdown) returned, under the deadline.
    fn within<T>(&mut self, cx: &mut Context<'_>, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if polled.is_ready() {
            self.waiting = None;
            return polled;
        }
        let limit = self.limit;
        let waiting = self.waiting.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match waiting.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => {
                self.waiting = None;
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("the client read nothing for {} s", limit.as_secs_f64()),
                )))
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteDeadline<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.within(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.within(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.within(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.within(cx, polled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Writes into a pipe nobody reads fail after the limit, not before; a reader that takes the
    /// bytes keeps the writes going however long the whole takes.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_write_nobody_takes_fails_at_the_limit_and_a_slow_reader_is_served() {
        let limit = Duration::from_secs(30);
        let (near, _far) = tokio::io::duplex(1024);
        let mut w = WriteDeadline::new(near, limit);
        let started = tokio::time::Instant::now();
        let chunk = [7u8; 4096];
        let error = loop {
            if let Err(e) = w.write(&chunk).await {
                break e;
            }
        };
        assert_eq!(error.kind(), io::ErrorKind::TimedOut, "{error}");
        assert_eq!(started.elapsed(), limit, "the write failed at {:?}", started.elapsed());

        // A reader taking 1 KiB every 20 s: each write waits less than the limit, so 64 KiB get
        // through in about 20 minutes of (paused) time.
        let (near, mut far) = tokio::io::duplex(1024);
        let reader = tokio::spawn(async move {
            let (mut got, mut buf) = (0, [0u8; 1024]);
            while got < 64 << 10 {
                tokio::time::sleep(Duration::from_secs(20)).await;
                got += far.read(&mut buf).await.unwrap();
            }
            got
        });
        let mut w = WriteDeadline::new(near, limit);
        w.write_all(&[1u8; 64 << 10]).await.unwrap();
        assert_eq!(reader.await.unwrap(), 64 << 10);
    }
}
