"""Training: the data and tasks, the model, its loss, the training loop, its metrics, and a run on disk."""
