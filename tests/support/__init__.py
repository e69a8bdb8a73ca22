"""What the tests share that is not a fixture: local servers standing in for Slack, an OpenAI-compatible
LLM, an embeddings and a rerank service; the Slack harness; a database proxy that can be cut; replica
workers; hostile inputs; small wikis and models built for a test; where the corpora are."""
