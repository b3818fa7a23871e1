"""training/jobs.py: the progress the main job and the sweep print is read from each child's log."""

from training.jobs import trainer_progress


def test_progress_reads_the_trainers_bar_not_the_checkpoint_writers(tmp_path):
    """A checkpoint save prints Transformers' `Writing model shards: ... 1/1` bar after the Trainer's: the job's
    progress line must keep showing the training step."""
    log = tmp_path / "run.log"
    log.write_text(
        " 32%|███▏      | 1600/5000 [03:26<02:57, 19.15it/s]\r 32%|███▏      | 1601/5000 [03:26<02:57, "
        "19.1it/s]\n\rWriting model shards:   0%|          | 0/1 [00:00<?, ?it/s]\x1b[A\rWriting model "
        "shards: 100%|██████████| 1/1 [00:00<00:00, 12.2it/s]\nMap: 100%|███| 50/50 [00:00<00:00, 99.0 "
        "examples/s]",
        encoding="utf-8",
    )
    assert trainer_progress(log) == (1601, 5000)


def test_progress_keeps_the_training_bar_while_an_evaluation_runs(tmp_path):
    """Runs that evaluate during training (the sweep's convergence trials) print the evaluation's bar between
    training steps: the progress stays the training step's."""
    log = tmp_path / "run.log"
    log.write_text(
        " 8%|▊         | 4500/60000 [13:33<2:23:11,  6.42it/s]\n"
        "***** Running Evaluation *****\n 12%|█▏        | 2/17 [00:01<00:10,  1.50it/s]",
        encoding="utf-8",
    )
    assert trainer_progress(log) == (4500, 60000)
