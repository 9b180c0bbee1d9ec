//! What a driver runs: [`Request`] — an [`Op`], a [`ScriptCall`] or a
//! [`Batch`] — and `run` / `run_async`, which hand it to the sync or the
//! async driver. It stands above both drivers, so that the op below them
//! knows neither.

use redis::FromRedisValue;

use super::batch::Batch;
use super::conn::Connection;
#[cfg(feature = "tokio")]
use super::conn_async::AsyncConnection;
use super::op::{Op, Replies};
use crate::error::Result;
use crate::script::ScriptCall;

/// Anything a driver can run: an [`Op`], a [`ScriptCall`] (or a generated
/// wrapper's `Result<ScriptCall>`) or a [`Batch`].
pub trait Request: Sized + Send + 'static {
    /// What the request answers.
    type Output: Send + 'static;

    /// The operation this request stands for.
    fn into_op(self) -> Op<Self::Output>;

    /// Runs it on a sync connection.
    fn run(self, con: &mut Connection) -> Result<Self::Output> {
        con.execute(self.into_op())
    }

    /// Runs it on an async connection (a shared reference: the connection
    /// is a cheap handle whose clones share its connections, so concurrent
    /// tasks can run requests on one `&AsyncConnection`).
    ///
    /// Dropping the future at an await (`tokio::time::timeout`, `select!`,
    /// an aborted task) stops the request there: what it sent may have run
    /// on the server, and nothing more is sent, except the op's undo
    /// ([`Op::undo_on_cancel`]: an acquire's release), which a spawned task
    /// runs; the subscriptions of its waits are left (see the
    /// [cancellation guide](crate::guide::cancellation)).
    #[cfg(feature = "tokio")]
    fn run_async(
        self,
        con: &AsyncConnection,
    ) -> impl std::future::Future<Output = Result<Self::Output>> + Send {
        con.execute(self.into_op())
    }
}

impl<T: Send + 'static> Request for Op<T> {
    type Output = T;
    fn into_op(self) -> Op<T> {
        self
    }
}

impl<R: FromRedisValue + Send + 'static> Request for ScriptCall<R> {
    type Output = R;
    fn into_op(self) -> Op<R> {
        Op::call(self)
    }
}

impl<R: FromRedisValue + Send + 'static> Request for Result<ScriptCall<R>> {
    type Output = R;
    fn into_op(self) -> Op<R> {
        Op::script(self)
    }
}

impl Request for Batch {
    type Output = Replies;
    fn into_op(self) -> Op<Replies> {
        Op::send(self, Ok)
    }
}
