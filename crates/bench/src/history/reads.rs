//! The reads of the history phase: every call a client or an administrator makes, sent on both
//! sides in the same rounds.

use super::*;

impl Side {
    /// Every read of the big org and of the small one, `reps` times, on both sides at once. A
    /// first call of each read is timed apart (`first_ms`: the org's pages may not be cached
    /// yet, a cost paid once, not per call); then `reps` rounds send every read once, starting
    /// one read later each round, each call on one side followed at once by the same call on
    /// the other. A disturbance from elsewhere on the machine (a checkpoint, an autovacuum, the
    /// relay) then lands on a call or two of several reads, not on consecutive calls of one
    /// read, where a few slow calls are that read's p95; and the machine's speed, which drifts
    /// within a run, is the same for both columns of a ratio, not that of two minutes apart.
    pub(super) async fn reads_beside(sides: [&Side; 2], reps: usize) -> anyhow::Result<[Value; 2]> {
        let mut v = [serde_json::Map::new(), serde_json::Map::new()];
        for (i, org) in ["big", "small"].into_iter().enumerate() {
            let mut calls = Vec::new();
            for s in sides {
                calls.push(
                    s.calls(if i == 0 { &s.big } else { &s.small }, &s.cookies[i])
                        .await?,
                );
            }
            let n = calls[0].len();
            anyhow::ensure!(calls[1].len() == n, "the two sides' reads differ");
            let mut first = [Vec::with_capacity(n), Vec::with_capacity(n)];
            let mut ms = [
                vec![Vec::with_capacity(reps); n],
                vec![Vec::with_capacity(reps); n],
            ];
            for (a, b) in calls[0].iter().zip(&calls[1]) {
                first[0].push(sides[0].timed(a).await?);
                first[1].push(sides[1].timed(b).await?);
            }
            for round in 0..reps {
                for k in 0..n {
                    let j = (round + k) % n;
                    // Which side goes first alternates, so neither always follows the other.
                    for t in 0..2 {
                        let s = (round + t) % 2;
                        ms[s][j].push(sides[s].timed(&calls[s][j]).await?);
                    }
                }
            }
            for s in 0..2 {
                let mut m = serde_json::Map::new();
                for ((c, ms), first) in calls[s].iter().zip(&mut ms[s]).zip(&first[s]) {
                    ms.sort_by(f64::total_cmp);
                    m.insert(
                        c.name.clone(),
                        json!({"p50_ms": r3(pct(ms, 0.5)), "p95_ms": r3(pct(ms, 0.95)),
                               "first_ms": r3(*first)}),
                    );
                }
                v[s].insert(org.into(), Value::Object(m));
            }
        }
        let [a, b] = v;
        Ok([Value::Object(a), Value::Object(b)])
    }

    /// One call of `c`, in milliseconds, checked for the status it should answer.
    pub(super) async fn timed(&self, c: &Call) -> anyhow::Result<f64> {
        let t = Instant::now();
        let status = c.send(&self.env.http).await?;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(
            status == c.expect,
            "{} answered {status}, not {}",
            c.name,
            c.expect
        );
        Ok(ms)
    }

    /// The reads of `org`, with ids and cursors taken from its own data.
    pub(super) async fn calls(&self, org: &Org, cookie: &str) -> anyhow::Result<Vec<Call>> {
        let pg = self.env.db.client().await;
        // A delivery and a lead of the org from the middle of its history (the newest with an
        // empty database).
        let row = pg
            .query_opt(
                "SELECT delivery_id::text, event_id::text, coalesce(lead_id::text, '') FROM outbox
                 WHERE org_id = $1::text::uuid AND lead_id IS NOT NULL
                 ORDER BY created_at < now() - interval '15 days' DESC, seq DESC LIMIT 1",
                &[&org.id],
            )
            .await?;
        let (delivery, event, lead) = match row {
            Some(r) => (
                r.get::<_, String>(0),
                r.get::<_, String>(1),
                r.get::<_, String>(2),
            ),
            None => {
                let z = uuid::Uuid::nil().to_string();
                (z.clone(), z.clone(), z)
            }
        };
        // A lead that exists (the history's events name leads the leads table does not hold).
        let live_lead: Option<String> = pg
            .query_opt(
                "SELECT id::text FROM leads WHERE org_id = $1::text::uuid LIMIT 1",
                &[&org.id],
            )
            .await?
            .map(|r| r.get(0));
        let i = |path: String| format!("{}/internal/v1/orgs/{}/{path}", self.env.internal, org.id);
        let day_ago = time_arg(-86_400);
        let hour_ago = time_arg(-3_600);
        let month_ago = time_arg(-(DAYS * 86_400 + 3600));
        let old_end = time_arg(-(DAYS - 1) * 86_400);
        let first_page: Value = self
            .env
            .http
            .get(i("deliveries?limit=50".into()))
            .bearer_auth(INTERNAL_TOKEN)
            .send()
            .await?
            .json()
            .await?;
        let next = first_page["next_cursor"].as_str().unwrap_or("").to_owned();
        let feed_first: Value = self
            .env
            .http
            .get(format!("{}/api/v1/events?limit=100", self.env.public))
            .bearer_auth(&org.tokens[0])
            .send()
            .await?
            .json()
            .await?;
        let feed_next = feed_first["next_cursor"].as_str().unwrap_or("").to_owned();
        let internal = |name: &str, path: String| Call::internal(name, i(path));
        let mut calls = vec![
            internal("deliveries", "deliveries?limit=50".into()),
            internal(
                "deliveries status=dead",
                "deliveries?limit=50&status=dead".into(),
            ),
            internal(
                "deliveries status=pending",
                "deliveries?limit=50&status=pending".into(),
            ),
            internal(
                "deliveries event_type=stage_changed",
                "deliveries?limit=50&event_type=lead.stage_changed".into(),
            ),
            internal(
                "deliveries lead_id",
                format!("deliveries?limit=50&lead_id={lead}"),
            ),
            internal(
                "deliveries since a day",
                format!("deliveries?limit=50&since={day_ago}"),
            ),
            // Fewer dead deliveries in the hour than a page holds (the history ends minutes
            // before the reads), so the bound on `seq`, not the page, has to end the walk.
            internal(
                "deliveries status=dead since an hour",
                format!("deliveries?limit=50&status=dead&since={hour_ago}"),
            ),
            internal(
                "deliveries until 29 days ago",
                format!("deliveries?limit=50&until={old_end}"),
            ),
            internal("deliveries one", format!("deliveries/{delivery}")),
            Call {
                name: "dry run dead, 30 days".into(),
                method: Method::POST,
                url: i("deliveries/replay".into()),
                auth: Auth::Internal,
                body: Some(json!({"status": ["dead"], "since": month_ago, "dry_run": true})),
                expect: 202,
            },
            // A range in the middle of the history, both ends inside an hour: the rows of
            // its two partial hours are counted through the org's dead deliveries, bounded by
            // the sequence's marks on both sides (the 30 days above start before the history,
            // so their partial hour holds no row).
            Call {
                name: "dry run dead, an hour 10 days ago".into(),
                method: Method::POST,
                url: i("deliveries/replay".into()),
                auth: Auth::Internal,
                body: Some(json!({
                    "status": ["dead"],
                    "since": time_arg(-(10 * 86_400 + 1_020)),
                    "until": time_arg(-(10 * 86_400 - 3_780)),
                    "dry_run": true,
                })),
                expect: 202,
            },
            Call {
                name: "console deliveries + chart".into(),
                method: Method::GET,
                url: format!("{}/console/deliveries", self.env.public),
                auth: Auth::Cookie(cookie.to_owned()),
                body: None,
                expect: 200,
            },
            Call {
                name: "console search event id".into(),
                method: Method::GET,
                url: format!("{}/console/deliveries?q={event}", self.env.public),
                auth: Auth::Cookie(cookie.to_owned()),
                body: None,
                expect: 200,
            },
            Call::public(
                "feed first page",
                format!("{}/api/v1/events?limit=100", self.env.public),
                &org.tokens[0],
            ),
            Call::public(
                "leads list",
                format!("{}/api/v1/leads?limit=50", self.env.public),
                &org.tokens[0],
            ),
        ];
        if !next.is_empty() {
            calls.push(internal(
                "deliveries page 2",
                format!("deliveries?limit=50&cursor={next}"),
            ));
        }
        if !feed_next.is_empty() {
            calls.push(Call::public(
                "feed next page",
                format!(
                    "{}/api/v1/events?limit=100&after={feed_next}",
                    self.env.public
                ),
                &org.tokens[0],
            ));
        }
        if let Some(l) = live_lead {
            calls.push(Call::public(
                "lead",
                format!("{}/api/v1/leads/{l}", self.env.public),
                &org.tokens[0],
            ));
        }
        Ok(calls)
    }
}

/// An instant `secs` from now, as the API's time filters take it.
pub(super) fn time_arg(secs: i64) -> String {
    let t = time::OffsetDateTime::now_utc() + time::Duration::seconds(secs);
    qualifier_domain::timefmt::format(t)
}

pub(super) enum Auth {
    Internal,
    Token(String),
    Cookie(String),
}

pub(super) struct Call {
    pub(super) name: String,
    method: Method,
    url: String,
    auth: Auth,
    body: Option<Value>,
    expect: u16,
}

impl Call {
    pub(super) fn internal(name: &str, url: String) -> Call {
        Call {
            name: name.into(),
            method: Method::GET,
            url,
            auth: Auth::Internal,
            body: None,
            expect: 200,
        }
    }

    pub(super) fn public(name: &str, url: String, token: &str) -> Call {
        Call {
            name: name.into(),
            method: Method::GET,
            url,
            auth: Auth::Token(token.to_owned()),
            body: None,
            expect: 200,
        }
    }

    pub(super) async fn send(&self, http: &reqwest::Client) -> anyhow::Result<u16> {
        let mut r = http.request(self.method.clone(), &self.url);
        r = match &self.auth {
            Auth::Internal => r.bearer_auth(INTERNAL_TOKEN),
            Auth::Token(t) => r.bearer_auth(t),
            Auth::Cookie(c) => r.header(reqwest::header::COOKIE, c),
        };
        if let Some(b) = &self.body {
            r = r.json(b);
        }
        let resp = r.send().await?;
        let status = resp.status().as_u16();
        // Read whole: the time is the page's, body included.
        let _ = resp.bytes().await?;
        Ok(status)
    }
}
