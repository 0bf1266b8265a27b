<?php
// The lab's PHP application: TechEmpower's test types (/plaintext, /json, /db, /queries,
// /fortunes, /updates) over PDO, answering as flint-app does, from the same tables and rows.
// The same file runs under php-fpm (FastCGI, persistent processes) and as a CGI program
// (php-cgi, a process per request). The database is FLINT_APP_DB (a SQLite file or a
// postgres:// URL), else the URL in postgres.url beside this file, else db/world.db beside it:
// flint-app's rule, so that both applications read the same database.

const WORLD_ROWS = 10000;

// The answers' heads as flint-app's: no X-Powered-By, no charset added to text/plain.
header_remove('X-Powered-By');
ini_set('default_charset', '');

// The test type: PATH_INFO's last segment, else the request path's (a server that sends no
// PATH_INFO, as nginx's fastcgi_params).
function test_type(): string
{
    $path = $_SERVER['PATH_INFO'] ?? '';
    if ($path === '') {
        $path = strtok($_SERVER['REQUEST_URI'] ?? '', '?');
    }
    $slash = strrpos($path, '/');
    return $slash === false ? $path : substr($path, $slash + 1);
}

// `queries=N`: 1 when missing or not a number, clamped to 1..=500 (the rules). Read as
// flint-app reads it: the first `queries=` of the raw query string, a decimal integer with an
// optional sign (leading zeros allowed, no spaces, no percent-decoding).
function queries(): int
{
    foreach (explode('&', $_SERVER['QUERY_STRING'] ?? '') as $pair) {
        if (str_starts_with($pair, 'queries=')) {
            $v = substr($pair, strlen('queries='));
            return preg_match('/^[+-]?\d{1,18}$/', $v) ? max(1, min(500, (int) $v)) : 1;
        }
    }
    return 1;
}

// The PDO data source of a SQLite file or a postgres:// URL (the socket directory as its
// percent-encoded host: postgres://flint@%2Ftmp%2Fpg/flint).
function data_source(string $location): array
{
    if (!preg_match('~^postgres(?:ql)?://(?:([^@/]*)@)?([^/]*)/(.*)$~', $location, $m)) {
        return ['sqlite:' . $location, null];
    }
    $host = rawurldecode($m[2]);
    return ['pgsql:host=' . $host . ';dbname=' . rawurldecode($m[3]), rawurldecode($m[1])];
}

function database(): PDO
{
    $location = getenv('FLINT_APP_DB');
    if ($location === false || $location === '') {
        $url = @file_get_contents(__DIR__ . '/postgres.url');
        $location = $url === false ? __DIR__ . '/db/world.db' : trim($url);
    }
    [$dsn, $user] = data_source($location);
    // Persistent: a php-fpm child keeps its connection between requests, as flint-app's
    // FastCGI responder keeps its own (a CGI process exits with it either way).
    $db = new PDO($dsn, $user, null, [
        PDO::ATTR_PERSISTENT => true,
        PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
        PDO::ATTR_EMULATE_PREPARES => false,
    ]);
    if (str_starts_with($dsn, 'sqlite:')) {
        // Writers (/updates) from several processes wait for each other instead of failing.
        $db->setAttribute(PDO::ATTR_TIMEOUT, 5);
    }
    return $db;
}

function world(PDOStatement $select, int $id): array
{
    $select->execute([$id]);
    [$id, $number] = $select->fetch(PDO::FETCH_NUM);
    // Ends the statement: a SQLite statement left stepping keeps a read transaction open, and
    // the UPDATE that follows in /updates would then fail at once with "database is locked"
    // when another process writes, instead of waiting (SQLite's busy handler is skipped
    // while a transaction is open).
    $select->closeCursor();
    return ['id' => (int) $id, 'randomNumber' => (int) $number];
}

function random_id(): int
{
    return mt_rand(1, WORLD_ROWS);
}

function reply(string $type, string $body): void
{
    header('Content-Type: ' . $type);
    header('Content-Length: ' . strlen($body));
    echo $body;
}

function fortunes(PDO $db): void
{
    $select = $db->prepare('SELECT id, message FROM Fortune');
    $select->execute();
    $rows = $select->fetchAll(PDO::FETCH_KEY_PAIR);
    $rows[0] = 'Additional fortune added at request time.';
    asort($rows, SORT_STRING);
    $html = '<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>'
        . '<tr><th>id</th><th>message</th></tr>';
    foreach ($rows as $id => $message) {
        $html .= '<tr><td>' . $id . '</td><td>'
            . htmlspecialchars($message, ENT_QUOTES | ENT_SUBSTITUTE, 'UTF-8') . '</td></tr>';
    }
    reply('text/html; charset=utf-8', $html . '</table></body></html>');
}

function answer(string $test): void
{
    switch ($test) {
        case 'plaintext':
            reply('text/plain', 'Hello, World!');
            return;
        case 'json':
            reply('application/json', json_encode(['message' => 'Hello, World!']));
            return;
        case 'db':
        case 'queries':
        case 'updates':
        case 'fortunes':
            break;
        default:
            http_response_code(404);
            reply('text/plain', "not found\n");
            return;
    }
    try {
        $db = database();
        if ($test === 'fortunes') {
            fortunes($db);
            return;
        }
        $select = $db->prepare('SELECT id, randomNumber FROM World WHERE id = ?');
        if ($test === 'db') {
            reply('application/json', json_encode(world($select, random_id())));
            return;
        }
        $rows = [];
        for ($i = queries(); $i > 0; $i--) {
            $rows[] = world($select, random_id());
        }
        if ($test === 'updates') {
            foreach ($rows as &$row) {
                // A new number, as the rules ask (a changed value, so the update is real).
                do {
                    $n = random_id();
                } while ($n === $row['randomNumber']);
                $row['randomNumber'] = $n;
            }
            unset($row);
            // Ids in order: concurrent updaters then take row locks in the same order.
            $sorted = $rows;
            usort($sorted, fn ($a, $b) => $a['id'] <=> $b['id']);
            $update = $db->prepare('UPDATE World SET randomNumber = ? WHERE id = ?');
            $db->beginTransaction();
            foreach ($sorted as $row) {
                $update->execute([$row['randomNumber'], $row['id']]);
            }
            $db->commit();
        }
        reply('application/json', json_encode($rows));
    } catch (Throwable $e) {
        // A database that cannot be opened or a statement that fails: 500 with its reason
        // (PDO's "could not find driver" names a missing pdo_sqlite or pdo_pgsql).
        if (isset($db) && $db->inTransaction()) {
            $db->rollBack();
        }
        http_response_code(500);
        reply('text/plain', 'database: ' . $e->getMessage() . "\n");
    }
}

answer(test_type());
