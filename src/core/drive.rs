//! One op run to completion, as both drivers run it: [`Run`] steps the op
//! and the exchange of each batch it sends, and asks its driver only for
//! I/O ([`Io`]: sleep, wait on a channel, find where commands go, send a
//! round's pipelines), whose results come back as [`Input`].

use std::time::Duration;

use super::exchange::{Exchange, Next, Outcome, Part, Refresh, Target};
use super::op::{Op, Replies, Step, wait_replies};
use super::settings::Settings;
use crate::error::Result;

/// What a driver does next for a [`Run`].
pub(crate) enum Io<'a, T> {
    /// The op finished with this value.
    Done(T),
    /// Sleep this long, then [`Input::Slept`].
    Sleep(Duration),
    /// Wait for a message on `channel` until `timeout`, then
    /// [`Input::Woken`] (whether a message came; only one equal to `to`
    /// or [`Step::BROADCAST`](super::machine::Step::BROADCAST) when `to` is given).
    Wait {
        channel: Vec<u8>,
        to: Option<Vec<u8>>,
        timeout: Duration,
    },
    /// Refresh what is asked, then find where each command goes (the slot
    /// of each pending command, `None`: no key): [`Input::Targets`].
    Route(Refresh, Vec<Option<u16>>),
    /// Send these pipelines, then [`Input::Sent`] (an outcome per part).
    Send(&'a [Part]),
}

/// What the driver did for the last [`Io`].
pub(crate) enum Input {
    /// Nothing yet: the run starts.
    Start,
    Slept,
    Woken(bool),
    Targets(Result<Vec<Target>>),
    Sent(Vec<Outcome>),
}

/// What [`Run::absorb`] made of the driver's [`Input`].
enum Absorbed {
    /// The replies to step on with (`None`: none yet).
    Replies(Option<Replies>),
    /// Send the round in `Run::parts`.
    Send,
    /// Refresh this, then return the failed exchange's error.
    Route(Refresh),
}

/// An op being run, and the exchange of the batch it sent (if any).
pub(crate) struct Run<T> {
    op: Op<T>,
    /// The capability detection that runs first, on a connection that does
    /// not know its server's [`Caps`](super::caps::Caps) yet.
    detect: Option<Op<super::caps::Caps>>,
    settings: Settings,
    exchange: Option<Exchange>,
    /// The round being sent.
    parts: Vec<Part>,
    /// The error of an exchange that failed, returned once the driver has
    /// refreshed what the exchange asked for.
    failed: Option<crate::Error>,
}

impl<T: Send + 'static> Run<T> {
    pub(crate) fn new(op: Op<T>, settings: Settings) -> Self {
        Self {
            op,
            detect: settings.env.caps.is_none().then(super::probe::detect),
            settings,
            exchange: None,
            parts: Vec::new(),
            failed: None,
        }
    }

    /// The next I/O, after `input` (the outcome of the previous one).
    pub(crate) fn next(&mut self, input: Input) -> Result<Io<'_, T>> {
        self.next_undoable(input, &mut Vec::new())
    }

    /// [`Run::next`], moving the undo ops the op's steps revealed
    /// ([`Op::undo_on_cancel`]) into `undo`: what a driver that can be
    /// dropped at an await runs when it is.
    pub(crate) fn next_undoable(
        &mut self,
        input: Input,
        undo: &mut Vec<Op<()>>,
    ) -> Result<Io<'_, T>> {
        let replies = match self.absorb(input)? {
            Absorbed::Replies(replies) => replies,
            Absorbed::Send => return Ok(Io::Send(&self.parts)),
            Absorbed::Route(refresh) => return Ok(Io::Route(refresh, Vec::new())),
        };
        self.advance(replies, undo)
    }

    /// Takes in what the driver did: the replies for the op (or the
    /// exchange's next step), or the I/O an exchange asks for at once.
    fn absorb(&mut self, input: Input) -> Result<Absorbed> {
        Ok(Absorbed::Replies(match input {
            Input::Start => None,
            Input::Woken(woken) => Some(wait_replies(woken)),
            Input::Slept if self.exchange.is_none() => Some(Replies::default()),
            Input::Slept => self.exchange_next()?,
            Input::Targets(_) if self.failed.is_some() => {
                // The refresh of a failed exchange is done.
                self.exchange = None;
                return Err(self.failed.take().expect("matched above"));
            }
            Input::Targets(targets) => {
                let ex = self.exchange.as_mut().expect("routed for an exchange");
                match targets {
                    Ok(targets) => {
                        self.parts = ex.round(targets);
                        return Ok(Absorbed::Send);
                    }
                    Err(e) => ex.unreachable(e)?,
                }
                self.exchange_next()?
            }
            Input::Sent(outcomes) => {
                let ex = self.exchange.as_mut().expect("sent for an exchange");
                if let Err(e) = ex.settle(std::mem::take(&mut self.parts), outcomes) {
                    // What the round learnt of the topology outlives the
                    // exchange: the next call must not meet the same stale
                    // view (a demoted primary, a moved slot).
                    let refresh = ex.take_refresh();
                    if refresh == Refresh::default() {
                        return Err(e);
                    }
                    self.failed = Some(e);
                    return Ok(Absorbed::Route(refresh));
                }
                self.exchange_next()?
            }
        }))
    }

    /// Steps the exchange, or the op with `replies`, until one of them asks
    /// for I/O or the op is done.
    fn advance(
        &mut self,
        mut replies: Option<Replies>,
        undo: &mut Vec<Op<()>>,
    ) -> Result<Io<'_, T>> {
        loop {
            if let Some(ex) = &mut self.exchange {
                return Ok(match ex.next() {
                    Next::Sleep(d) => Io::Sleep(d),
                    Next::Send(refresh) => Io::Route(refresh, ex.pending_slots()),
                    Next::Done => unreachable!("a finished exchange was taken"),
                });
            }
            let Some(step) = self.step_op(replies.take(), undo)? else {
                continue;
            };
            match step {
                Step::Done(v) => return Ok(Io::Done(v)),
                Step::Sleep(d) => return Ok(Io::Sleep(d)),
                Step::Wait {
                    channel,
                    to,
                    timeout,
                } => {
                    return Ok(Io::Wait {
                        channel,
                        to,
                        timeout,
                    });
                }
                Step::Send(batch) => {
                    self.exchange = Some(Exchange::start(batch, &self.settings)?);
                    replies = self.exchange_next()?;
                }
            }
        }
    }

    /// One step of the capability detection, while it runs (`None` when it
    /// just finished), else of the op.
    fn step_op(
        &mut self,
        replies: Option<Replies>,
        undo: &mut Vec<Op<()>>,
    ) -> Result<Option<Step<T>>> {
        match &mut self.detect {
            Some(detect) => match detect.step(&self.settings.env, replies)? {
                Step::Done(caps) => {
                    self.settings.env.caps = Some(caps);
                    self.detect = None;
                    Ok(None)
                }
                other => Ok(Some(other.forward().expect("not done"))),
            },
            None => {
                let step = self.op.step(&self.settings.env, replies);
                self.op.take_undo(undo);
                step.map(Some)
            }
        }
    }

    /// What the server can do, once detected (the driver keeps it for the
    /// connection's later operations).
    pub(crate) fn caps(&self) -> Option<super::caps::Caps> {
        self.settings.env.caps
    }

    /// The replies of the exchange when it is done (it is then dropped);
    /// `None` while it goes on.
    fn exchange_next(&mut self) -> Result<Option<Replies>> {
        match &mut self.exchange {
            Some(ex) if ex.is_done() => {
                let ex = self.exchange.take().expect("matched above");
                ex.finish().map(Some)
            }
            _ => Ok(None),
        }
    }
}
