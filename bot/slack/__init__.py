"""Docent in Slack: the Bolt app (`app`), its listeners (`listeners/`), and what they need to speak Slack.

- `app` — builds the Bolt app and registers every listener module's `register(app, services)`;
- `listeners/` — what answers Slack's requests: mentions, DMs, edits, help channels, `/kb`, votes,
  the App Home, the Verify shortcut (see its `__init__`);
- `services` — what the listeners use (`Services`: the `KnowledgeBase`, the database, access, ...);
- `errors` — apologies with a reference id, "temporarily unavailable", Bolt's last-resort handler;
- `store` — Slack's own tables: delivery claims (once-only answers), answer messages, hand-overs;
- `audiences` — the audience of a conversation; `asked` — the question a message event asks;
- `streaming` (`AnswerDelivery`: one answer into Slack), `handover` (asking a channel's people),
  `verified_review` (a verified answer's verifier told of a 👎, reviews due), `digest` (the weekly
  gaps digest), `resync_runs` (admin resyncs in the background), `question_detector`;
- `blocks` (Block Kit within Slack's limits), `home_blocks` and `verify_form` (the App Home and the
  Verify form as Block Kit), `mrkdwn` (Markdown → Slack text), `client` (the Web API client),
  `workers` (the listener and answers pools).
"""
