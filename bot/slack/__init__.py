"""Docent in Slack: the Bolt app (`app`), its listeners, and what they need to speak Slack.

- `app` — builds the Bolt app and registers every listener module's `register(app, services)`;
- `questions` — @mentions, direct messages, thread follow-ups;
- `commands` — the `/kb` router and `help` / `ask` / `status`; `resync` — `/kb resync`;
- `feedback` — 👍 / 👎 votes, the 👎 form, Share in channel;
- `access_events` — events that change who sees what; `access` — the audience of a conversation;
- `errors` — apologies with a reference id, "temporarily unavailable";
- `blocks` (Block Kit within Slack's limits), `mrkdwn` (Markdown → Slack text), `dedupe`
  (once-only answers), `client` (the Web API client), `workers` (the listener and answers pools).
"""
