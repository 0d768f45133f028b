"""``git forge demo``: a throwaway repository, a small backlog and a scripted agent."""
