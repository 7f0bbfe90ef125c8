"""Datasets the examples train on, with torchvision's interface (Debian 12 has no torchvision).

``FashionMNIST(root, train=True, transform=None, target_transform=None)`` reads the IDX gzip
files that Debian's ``dataset-fashion-mnist`` installs in ``/usr/share/datasets/fashion-mnist``
and yields ``(image, label)``: a float32 ``[1, 28, 28]`` tensor of ``byte / 255`` (what
torchvision's ``ToTensor`` gives) and an ``int``. A script written for
``torchvision.datasets.FashionMNIST(root, train=..., transform=ToTensor())`` changes its import.
"""
from __future__ import annotations

from typing import Callable, Optional, Tuple

import torch
from torch.utils.data import Dataset

from snnexport.training.data import FASHION_MNIST_DIR, load_fashion_mnist
from snnexport.training.config import TrainingError


class FashionMNIST(Dataset):
    """Fashion-MNIST's train (60000) or test (10000) split as a map-style dataset."""

    def __init__(self, root: str = FASHION_MNIST_DIR, train: bool = True,
                 transform: Optional[Callable] = None,
                 target_transform: Optional[Callable] = None) -> None:
        try:
            data = load_fashion_mnist(root, "train" if train else "t10k")
        except TrainingError as e:
            raise FileNotFoundError(f"Fashion-MNIST: {e} (Debian: apt install "
                                    f"dataset-fashion-mnist)") from None
        self.data = torch.from_numpy(data.x)
        self.targets = torch.from_numpy(data.y)
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self) -> int:
        return int(self.targets.shape[0])

    def __getitem__(self, index: int) -> Tuple[torch.Tensor, int]:
        image, label = self.data[index], int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            label = self.target_transform(label)
        return image, label
