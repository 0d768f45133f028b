"""git forge recover: the seven-step recovery procedure, its questions and its report."""
