"""Docent in Slack: the Bolt app (`app`), its listeners, and what they need to speak Slack.

- `app` — builds the Bolt app and registers every listener module's `register(app, services)`;
  `services` — what the listeners use (`Services`: the `KnowledgeBase`, the database, access, ...);
- `questions` — @mentions, direct messages, thread follow-ups;
- `commands` — the `/kb` router and `help` / `ask` / `status`; `resync_command` — `/kb resync`
  (`resync` runs it in the background); `channel_command` — `/kb channel`;
- `feedback` — 👍 / 👎 votes, the 👎 form, Share in channel;
- `access_events` — events that change who sees what; `access` — the audience of a conversation;
- `errors` — apologies with a reference id, "temporarily unavailable";
- `store` — Slack's own tables: delivery claims (once-only answers), answer messages, hand-overs;
- `blocks` (Block Kit within Slack's limits), `mrkdwn` (Markdown → Slack text), `client` (the Web
  API client), `streaming` (`AnswerDelivery`: one answer into Slack), `workers` (the listener and
  answers pools).
"""
