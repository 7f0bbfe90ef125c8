"""Nine networks of SpikingJelly's model zoo and tutorials, rebuilt here in their structure,
forward code and constructor arguments (not copied), for the import-only port test (sj_port.py).

The one line that makes this SpikingJelly code run on snnexport is the import below: with
`from spikingjelly.activation_based import ...` in its place the same file builds SpikingJelly's
own modules (sj_port.py does exactly that substitution when the package is importable).
  lif_fc_mnist.SNN, conv_fashion_mnist.CSNN      the tutorials
  MNISTNet, CIFAR10Net, CIFAR10DVSNet, DVSGestureNet   model/parametric_lif_net.py
  sew_resnet18, spiking_resnet18, spiking_vgg11_bn     model/{sew_resnet,spiking_resnet,spiking_vgg}.py
"""
from copy import deepcopy

import torch
import torch.nn as nn

from snnexport import functional, layer, neuron, surrogate  # the port: this import alone


# ------------------------------------------------------------------ tutorials
class SNN(nn.Module):
    """lif_fc_mnist: one fully connected LIF layer, single-step, run over T by a loop."""

    def __init__(self, tau):
        super().__init__()
        self.layer = nn.Sequential(
            layer.Flatten(),
            layer.Linear(28 * 28, 10, bias=False),
            neuron.LIFNode(tau=tau, surrogate_function=surrogate.ATan()),
        )

    def forward(self, x: torch.Tensor):
        return self.layer(x)


class CSNN(nn.Module):
    """conv_fashion_mnist: direct encoding inside forward, multi-step, firing-rate readout."""

    def __init__(self, T: int, channels: int, use_cupy=False):
        super().__init__()
        self.T = T
        self.conv_fc = nn.Sequential(
            layer.Conv2d(1, channels, kernel_size=3, padding=1, bias=False),
            layer.BatchNorm2d(channels),
            neuron.IFNode(surrogate_function=surrogate.ATan()),
            layer.MaxPool2d(2, 2),
            layer.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False),
            layer.BatchNorm2d(channels),
            neuron.IFNode(surrogate_function=surrogate.ATan()),
            layer.MaxPool2d(2, 2),
            layer.Flatten(),
            layer.Linear(channels * 7 * 7, channels * 4 * 4, bias=False),
            neuron.IFNode(surrogate_function=surrogate.ATan()),
            layer.Linear(channels * 4 * 4, 10, bias=False),
            neuron.IFNode(surrogate_function=surrogate.ATan()),
        )
        functional.set_step_mode(self, step_mode="m")
        if use_cupy:
            functional.set_backend(self, backend="cupy")

    def forward(self, x: torch.Tensor):
        x_seq = x.unsqueeze(0).repeat(self.T, 1, 1, 1, 1)  # [N, C, H, W] -> [T, N, C, H, W]
        return self.conv_fc(x_seq).mean(0)


# ------------------------------------------------------------------ parametric_lif_net
def _conv_bn_sn(in_channels, channels, spiking_neuron, kwargs):
    return [layer.Conv2d(in_channels, channels, kernel_size=3, padding=1, bias=False),
            layer.BatchNorm2d(channels), spiking_neuron(**deepcopy(kwargs))]


def _classifier(features, hidden, outputs, voting, spiking_neuron, kwargs):
    return [layer.Flatten(), layer.Dropout(0.5), layer.Linear(features, hidden),
            spiking_neuron(**deepcopy(kwargs)), layer.Dropout(0.5), layer.Linear(hidden, outputs),
            spiking_neuron(**deepcopy(kwargs)), voting]


class MNISTNet(nn.Module):
    def __init__(self, channels=128, spiking_neuron: callable = None, **kwargs):
        super().__init__()
        self.conv_fc = nn.Sequential(
            *_conv_bn_sn(1, channels, spiking_neuron, kwargs), layer.MaxPool2d(2, 2),
            *_conv_bn_sn(channels, channels, spiking_neuron, kwargs), layer.MaxPool2d(2, 2),
            *_classifier(channels * 7 * 7, 2048, 100, layer.VotingLayer(), spiking_neuron,
                         kwargs))

    def forward(self, x: torch.Tensor):
        return self.conv_fc(x)


class CIFAR10Net(nn.Module):
    def __init__(self, channels=256, spiking_neuron: callable = None, **kwargs):
        super().__init__()
        conv = []
        for _ in range(2):
            for _ in range(3):
                conv += _conv_bn_sn(channels if conv else 3, channels, spiking_neuron, kwargs)
            conv.append(layer.MaxPool2d(2, 2))
        self.conv_fc = nn.Sequential(
            *conv, *_classifier(channels * 8 * 8, 2048, 100, layer.VotingLayer(10),
                                spiking_neuron, kwargs))

    def forward(self, x):
        return self.conv_fc(x)


def _dvs_convs(blocks, channels, spiking_neuron, kwargs):
    conv = []
    for _ in range(blocks):
        conv += _conv_bn_sn(channels if conv else 2, channels, spiking_neuron, kwargs)
        conv.append(layer.MaxPool2d(2, 2))
    return conv


class CIFAR10DVSNet(nn.Module):
    def __init__(self, channels=128, spiking_neuron: callable = None, **kwargs):
        super().__init__()
        self.conv_fc = nn.Sequential(
            *_dvs_convs(4, channels, spiking_neuron, kwargs),
            *_classifier(channels * 8 * 8, 512, 100, layer.VotingLayer(10), spiking_neuron,
                         kwargs))

    def forward(self, x: torch.Tensor):
        return self.conv_fc(x)


class DVSGestureNet(nn.Module):
    def __init__(self, channels=128, spiking_neuron: callable = None, **kwargs):
        super().__init__()
        self.conv_fc = nn.Sequential(
            *_dvs_convs(5, channels, spiking_neuron, kwargs),
            *_classifier(channels * 4 * 4, 512, 110, layer.VotingLayer(10), spiking_neuron,
                         kwargs))

    def forward(self, x: torch.Tensor):
        return self.conv_fc(x)


# ------------------------------------------------------------------ ResNets
def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    return layer.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation,
                        groups=groups, bias=False, dilation=dilation)


def conv1x1(in_planes, out_planes, stride=1):
    return layer.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


def sew_function(x: torch.Tensor, y: torch.Tensor, cnf: str):
    if cnf == "ADD":
        return x + y
    if cnf == "AND":
        return x * y
    raise NotImplementedError(cnf)


class SEWBasicBlock(nn.Module):
    """sew_resnet.BasicBlock: the shortcut joins the block's output spikes (cnf)."""
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, norm_layer=None, cnf=None,
                 spiking_neuron=None, **kwargs):
        super().__init__()
        norm_layer = norm_layer or layer.BatchNorm2d
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.sn1 = spiking_neuron(**deepcopy(kwargs))
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.sn2 = spiking_neuron(**deepcopy(kwargs))
        self.downsample = downsample
        if downsample is not None:
            self.downsample_sn = spiking_neuron(**deepcopy(kwargs))
        self.cnf = cnf

    def forward(self, x):
        identity = x
        out = self.sn1(self.bn1(self.conv1(x)))
        out = self.sn2(self.bn2(self.conv2(out)))
        if self.downsample is not None:
            identity = self.downsample_sn(self.downsample(x))
        return sew_function(identity, out, self.cnf)


class SpikingBasicBlock(nn.Module):
    """spiking_resnet.BasicBlock: the shortcut adds before the second neuron."""
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, norm_layer=None,
                 cnf=None, spiking_neuron=None, **kwargs):
        super().__init__()
        norm_layer = norm_layer or layer.BatchNorm2d
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.sn1 = spiking_neuron(**deepcopy(kwargs))
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.sn2 = spiking_neuron(**deepcopy(kwargs))
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.sn1(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.sn2(out)


class ResNet(nn.Module):
    """The torchvision-style trunk both zoo ResNets share (stem, 4 stages, avgpool, fc)."""

    def __init__(self, block, layers, num_classes=1000, zero_init_residual=False,
                 norm_layer=None, cnf=None, spiking_neuron=None, **kwargs):
        super().__init__()
        self._norm_layer = norm_layer = norm_layer or layer.BatchNorm2d
        self.inplanes = 64
        self.conv1 = layer.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3,
                                  bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.sn1 = spiking_neuron(**deepcopy(kwargs))
        self.maxpool = layer.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0], 1, cnf, spiking_neuron, **kwargs)
        self.layer2 = self._make_layer(block, 128, layers[1], 2, cnf, spiking_neuron, **kwargs)
        self.layer3 = self._make_layer(block, 256, layers[2], 2, cnf, spiking_neuron, **kwargs)
        self.layer4 = self._make_layer(block, 512, layers[3], 2, cnf, spiking_neuron, **kwargs)
        self.avgpool = layer.AdaptiveAvgPool2d((1, 1))
        self.fc = layer.Linear(512 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, layer.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (layer.BatchNorm2d, layer.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, (SEWBasicBlock, SpikingBasicBlock)):
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes, blocks, stride, cnf, spiking_neuron, **kwargs):
        norm_layer, downsample = self._norm_layer, None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, norm_layer, cnf,
                        spiking_neuron, **kwargs)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, norm_layer=norm_layer, cnf=cnf,
                                spiking_neuron=spiking_neuron, **kwargs))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.sn1(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = self.avgpool(x)
        if self.avgpool.step_mode == "s":
            x = torch.flatten(x, 1)
        elif self.avgpool.step_mode == "m":
            x = torch.flatten(x, 2)
        return self.fc(x)


def sew_resnet18(pretrained=False, progress=True, cnf: str = None, spiking_neuron=None,
                 **kwargs):
    return ResNet(SEWBasicBlock, [2, 2, 2, 2], cnf=cnf, spiking_neuron=spiking_neuron, **kwargs)


def spiking_resnet18(pretrained=False, progress=True, spiking_neuron=None, **kwargs):
    return ResNet(SpikingBasicBlock, [2, 2, 2, 2], spiking_neuron=spiking_neuron, **kwargs)


# ------------------------------------------------------------------ VGG
class SpikingVGG(nn.Module):
    def __init__(self, cfg, batch_norm=False, norm_layer=None, num_classes=1000,
                 init_weights=True, spiking_neuron=None, **kwargs):
        super().__init__()
        self.features = self.make_layers(cfg, batch_norm, norm_layer, spiking_neuron, **kwargs)
        self.avgpool = layer.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            layer.Linear(512 * 7 * 7, 4096), spiking_neuron(**deepcopy(kwargs)), layer.Dropout(),
            layer.Linear(4096, 4096), spiking_neuron(**deepcopy(kwargs)), layer.Dropout(),
            layer.Linear(4096, num_classes))
        if init_weights:
            for m in self.modules():
                if isinstance(m, layer.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, layer.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, layer.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.avgpool(self.features(x))
        if self.avgpool.step_mode == "s":
            x = torch.flatten(x, 1)
        elif self.avgpool.step_mode == "m":
            x = torch.flatten(x, 2)
        return self.classifier(x)

    @staticmethod
    def make_layers(cfg, batch_norm=False, norm_layer=None, neuron=None, **kwargs):
        norm_layer = norm_layer or layer.BatchNorm2d
        layers, in_channels = [], 3
        for v in cfg:
            if v == "M":
                layers.append(layer.MaxPool2d(kernel_size=2, stride=2))
                continue
            layers.append(layer.Conv2d(in_channels, v, kernel_size=3, padding=1))
            if batch_norm:
                layers.append(norm_layer(v))
            layers.append(neuron(**deepcopy(kwargs)))
            in_channels = v
        return nn.Sequential(*layers)


VGG11 = [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"]


def spiking_vgg11_bn(pretrained=False, progress=True, norm_layer=None, spiking_neuron=None,
                     **kwargs):
    return SpikingVGG(VGG11, batch_norm=True, norm_layer=norm_layer,
                      spiking_neuron=spiking_neuron, **kwargs)
