"""The sources file's model: which wikis Docent reads, how, and who sees what."""
