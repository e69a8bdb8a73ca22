"""What Docent keeps of its questions: the query log and votes, the gaps report (and its drafts
of missing pages), and the housekeeping that deletes what is past its retention."""
