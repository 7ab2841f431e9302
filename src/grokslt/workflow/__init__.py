"""Workflow: the config and its schema, experiments and run ids, the per-run and summary tables, the planner."""
