<?php
// PSR-4 autoloading of RedisPatterns\ from src/, for use without Composer:
//   require __DIR__ . '/autoload.php';
spl_autoload_register(function (string $class): void {
    $prefix = 'RedisPatterns\\';
    if (strncmp($class, $prefix, strlen($prefix)) !== 0) {
        return;
    }
    $file = __DIR__ . '/src/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
    if (is_file($file)) {
        require $file;
    }
});
