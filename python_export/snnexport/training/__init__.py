"""The PyTorch eager reference trainer, by concern (`snnexport.train` re-exports all of it):

- `config`: `TrainConfig`, `TrainingError`, step counts;
- `data`: the SplitMix64 sample order, `Dataset` (direct encoding), Fashion-MNIST / NumPy loaders;
- `optim`: `make_optimizer` (torch.optim SGD / Adam / AdamW) and the schedules (`lr_at`);
- `loop`: firing rate, losses, `evaluate` and `train`;
- `cli`: `python3 -m snnexport.train` (`main`), `model_from_case`, `build_model`.
"""
