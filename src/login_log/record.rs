//! Recording a login, query (1): one atomic script, or two idempotent
//! single-slot scripts on a cluster when the user's log and the day's index
//! live in different slots.

use chrono::{Datelike, NaiveDate};

use super::{LoginLog, check_type};
use crate::bitmap::{checked, days, offsets};
use crate::core::resend::changed;
use crate::core::{Batch, Op};
use crate::keys::cluster_slot;
use crate::scripts;

impl LoginLog {
    /// (1) Records a login of user `uid` of `user_type` on `day`;
    /// `Some(true)` when it is the user's first login recorded that day,
    /// `None` when that is not known: the call was sent again after its
    /// reply was lost (a broken connection, a failover) and found the login
    /// recorded — by the first attempt, or before it.
    pub fn record(&self, user_type: &str, uid: u64, day: NaiveDate) -> Op<Option<bool>> {
        checked(|| {
            check_type(user_type)?;
            offsets::check_uid(uid, self.settings.max_uid)?;
            let log_exp = days::expire_at(self.settings.retention, days::end_of_month(day)?)?;
            let index_exp = days::expire_at(self.settings.retention, days::end_of_day(day)?)?;
            let log = self.log_key(user_type, uid, day);
            let index = self.index_key(user_type, day);
            let types = self.types_key(day);
            let user_type = user_type.to_string();
            let (day, uid, max_uid) = (
                i64::from(day.day()),
                uid as i64,
                self.settings.max_uid as i64,
            );
            Ok(Op::with_env(move |env| {
                if !env.is_cluster()
                    || cluster_slot(log.as_bytes()) == cluster_slot(index.as_bytes())
                {
                    return Op::script_resent(scripts::login_log::record(
                        &log, &index, &types, day, uid, max_uid, &user_type, log_exp, index_exp,
                    ))
                    .map(|(first, resent)| changed(first == 1, resent));
                }
                let mut batch = Batch::with_capacity(2);
                batch.script(scripts::login_log::mark(&log, day, log_exp));
                batch.script(scripts::login_log::index(
                    &index, &types, uid, max_uid, &user_type, index_exp,
                ));
                // The first-of-day flag is the log's (mark's) reply.
                Op::send(batch, |replies| {
                    let resent = replies.resent();
                    Ok(changed(replies.all::<i64>()?.first() == Some(&1), resent))
                })
            }))
        })
    }
}
