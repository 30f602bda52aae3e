"""A 64-64-10 multilayer perceptron trained on scikit-learn's handwritten digits with arraygrad
and a hand-written Adam optimizer: parameters are Variables, the loss is written against the
Array API standard, and ``loss.backward()`` fills every ``.grad``.

Set ``ARRAYGRAD_EXAMPLES_SMALL=1`` for a quick run.
"""

import os
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import arraygrad as ag

SMALL = os.environ.get("ARRAYGRAD_EXAMPLES_SMALL") == "1"
EPOCHS = 8 if SMALL else 40
BATCH = 64
HIDDEN = 64
TARGET = 0.85 if SMALL else 0.95


def init_params(rng, sizes):
    params = []
    for n_in, n_out in zip(sizes, sizes[1:]):
        params.append(ag.Variable(rng.standard_normal((n_in, n_out)) / np.sqrt(n_in),
                                  requires_grad=True))
        params.append(ag.Variable(np.zeros(n_out), requires_grad=True))
    return params


def logits(params, X):
    W1, b1, W2, b2 = params
    xp = W1.__array_namespace__()
    h = xp.tanh(X @ W1 + b1)
    return h @ W2 + b2


def cross_entropy(params, X, onehot):
    """Mean softmax cross-entropy, through a stable log-softmax."""
    xp = params[0].__array_namespace__()
    z = logits(params, X)
    shifted = z - xp.max(z, axis=1, keepdims=True)
    log_probs = shifted - xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))
    return -xp.mean(xp.sum(onehot * log_probs, axis=1))


class Adam:
    """Adam (Kingma & Ba, 2015) on the Variables' ``.data``, outside the graph."""

    def __init__(self, params, lr=3e-3, betas=(0.9, 0.999), eps=1e-8):
        self.params, self.lr, (self.b1, self.b2), self.eps = params, lr, betas, eps
        self.m = [np.zeros_like(p.data) for p in params]
        self.v = [np.zeros_like(p.data) for p in params]
        self.t = 0

    def step(self):
        self.t += 1
        with ag.no_grad():
            for p, m, v in zip(self.params, self.m, self.v):
                g = p.grad.data
                m *= self.b1
                m += (1 - self.b1) * g
                v *= self.b2
                v += (1 - self.b2) * g * g
                m_hat = m / (1 - self.b1 ** self.t)
                v_hat = v / (1 - self.b2 ** self.t)
                p.data = p.data - self.lr * m_hat / (np.sqrt(v_hat) + self.eps)

    def zero_grad(self):
        for p in self.params:
            p.grad = None


def accuracy(params, X, labels):
    with ag.no_grad():
        predicted = np.argmax(logits(params, X).data, axis=1)
    return float(np.mean(predicted == labels))


def main():
    digits = load_digits()
    X = digits.data / 16.0
    X_train, X_test, y_train, y_test = train_test_split(
        X, digits.target, test_size=0.25, random_state=0, stratify=digits.target)
    onehot_train = np.eye(10)[y_train]
    rng = np.random.default_rng(0)
    params = init_params(rng, (X.shape[1], HIDDEN, 10))
    optimizer = Adam(params)
    print(f"digits: {len(X_train)} train, {len(X_test)} test images of 8x8 pixels; "
          f"MLP {X.shape[1]}-{HIDDEN}-10, tanh, Adam, batch {BATCH}, {EPOCHS} epochs")
    start = time.perf_counter()
    for epoch in range(1, EPOCHS + 1):
        order = rng.permutation(len(X_train))
        total = 0.0
        for i in range(0, len(order), BATCH):
            batch = order[i:i + BATCH]
            loss = cross_entropy(params, X_train[batch], onehot_train[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.data) * len(batch)
        if epoch == 1 or epoch % max(1, EPOCHS // 5) == 0 or epoch == EPOCHS:
            print(f"epoch {epoch:3d}: train loss {total / len(order):.4f}, "
                  f"test accuracy {accuracy(params, X_test, y_test):.3f}")
    test_accuracy = accuracy(params, X_test, y_test)
    print(f"trained in {time.perf_counter() - start:.2f} s; train accuracy "
          f"{accuracy(params, X_train, y_train):.3f}, test accuracy {test_accuracy:.3f}")
    assert test_accuracy > TARGET, f"test accuracy {test_accuracy:.3f} <= {TARGET}"
    print("OK")


if __name__ == "__main__":
    main()
