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
