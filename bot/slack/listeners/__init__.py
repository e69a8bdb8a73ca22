"""What answers Slack's requests: each module here but the two `/kb` sub-commands has
`register(app, services)` and is one entry of `bot.slack.app.LISTENERS` (in the order Bolt tries them).

- `conversation` — edited questions answered again in place, deleted ones take their answer; which
  question a message asks (a bare mention in a thread asks the parent, a DM follow-up the previous one);
- `help_channels` — unprompted answers in `respond = "questions"` channels;
- `answered_gaps` — people's answers in handed-over threads, offered as the wiki's gaps;
- `questions` — @mentions, direct messages, thread follow-ups;
- `access_changes` — events that change who sees what;
- `commands` — the `/kb` router and `help` / `ask` / `status`; `resync_command` (`/kb resync`) and
  `channel_command` (`/kb channel`) are its sub-commands;
- `feedback` — 👍 / 👎 votes, the 👎 form, Share in channel;
- `verified_offer` — **Show it**: the verified answer offered beside the wiki's, given when taken;
- `verify` — the **Verify as the answer** shortcut and the App Home's Verify button;
- `home_tab` — the App Home tab;
- `suggested` — the App Home's Add as a question / Dismiss on suggested questions for verified answers;
- `assistant` — suggested prompts in Slack's AI-app threads.

They use `bot.slack.services.Services` and the support modules beside it in `bot.slack`; no support
module imports a listener (`tests/test_slack_layout.py`).
"""
